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
    // `progress` is called at most ~10 times a second and once at the end, on this thread.
    // `cancel` (may be null) is polled while data flows and at least once a second while stalled.
    // Errors: invalid_argument / not_found / unauthenticated / permission_denied as list_files; unavailable for a
    // cancelled or interrupted transfer (the partial is kept for a later resume); data_loss when
    // the content does not match (the partial is deleted); io for local disk failures.
    result<download_report> download(const std::string & repo, const std::string & revision, const repo_file & file,
                                     const std::filesystem::path & partial_path, const progress_fn & progress = {},
                                     const std::atomic<bool> * cancel = nullptr) const;

  private:
    http_client http_;
};

}  // namespace rc::hub
