#pragma once
// The Hugging Face Hub client: list a repository's files, search GGUF repositories, download one file
// with resume and verification. Stateless apart from its configuration: one instance may serve many
// threads at once (every call uses its own connection). Nothing here logs or returns the token.
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "hub/hub_config.h"
#include "hub/hub_types.h"
#include "hub/http_client.h"
#include "util/result.h"

namespace rc::hub {

// Bytes of the file present so far (including resumed ones) and its total size.
using progress_fn = std::function<void(uint64_t done, uint64_t total)>;
// Called before each wait for another attempt of a download.
using retry_fn = std::function<void(const retry_notice &)>;

class hub_client {
  public:
    explicit hub_client(hub_config cfg);

    const hub_config & config() const { return http_.config(); }

    // Every file of `repo` at `revision` (recursive; the Hub's pages followed). Errors:
    // invalid_argument (bad repo id or revision, checked before any request), not_found,
    // unauthenticated / permission_denied (gated/private: the message suggests HF_TOKEN), unavailable.
    result<std::vector<repo_file>> list_files(const std::string & repo, const std::string & revision = "main") const;

    // GGUF repositories matching `text`, most downloaded first; `limit` is clamped to 1..1000.
    result<std::vector<search_hit>> search(const std::string & text, int limit = 20) const;

    // Downloads `file` of `repo` at `revision` into `partial_path` (its directory must exist) and
    // verifies its size and sha256 (size only for non-LFS files, which have no digest). Resumes:
    // bytes already in `partial_path` are hashed and kept, and only the rest is requested (Range);
    // a server ignoring the range, a 416, or a partial larger than the file restart from zero.
    // On success the file is fsynced and complete; the caller moves it into place.
    // Rides out a flaky link: a dropped, refused, timed-out or stalled connection (no byte for
    // config().stall_timeout), a 5xx or a 429 is tried again from where the file stands (Range),
    // after a backoff with jitter or the server's Retry-After (capped), up to config().retry's
    // attempts in a row without new bytes; `on_retry` hears of each retry before its wait. Other 4xx
    // answers are final.
    // `progress` is called at most ~10 times a second and once at the end, on this thread.
    // `cancel` (may be null) is polled while data flows, at least once a second while stalled, and
    // while waiting to retry.
    // Errors: invalid_argument / not_found / unauthenticated / permission_denied as list_files; unavailable for a
    // cancelled transfer or one whose attempts ran out (the partial is kept for a later resume; the
    // message says how many attempts were made); data_loss when the content does not match (the
    // partial is deleted); io for local disk failures.
    result<download_report> download(const std::string & repo, const std::string & revision, const repo_file & file,
                                     const std::filesystem::path & partial_path, const progress_fn & progress = {},
                                     const std::atomic<bool> * cancel = nullptr, const retry_fn & on_retry = {}) const;

  private:
    http_client http_;
};

}  // namespace rc::hub
