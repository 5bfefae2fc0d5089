#pragma once
// Pulls a model from the Hugging Face Hub into the store: resolve the repo's GGUF files, pick the
// quantization, download each part with resume (partials under <store>/partial/), verify its
// sha256, register the manifest as quarantined, run the quarantine check, and mark the model ready
// — or failed, with the reason in the manifest and an incident record. Progress is reported in
// Ollama's /api/pull vocabulary ("pulling manifest", "pulling <digest>", "verifying sha256
// digest", "writing manifest", "success"), plus "retrying" while a download rides out a dropped or
// stalled connection, a 5xx or a 429 (the hub client's retries, hub_config::retry). Any thread; pulls of different models may run at once.
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "hub/hub_client.h"
#include "models/quarantine.h"
#include "store/model_store.h"
#include "util/result.h"

namespace rc::models {

struct pull_progress {
    std::string status;
    std::string digest{};  // "sha256:<hex>" while a part downloads
    uint64_t total = 0;
    uint64_t completed = 0;
    // With status "retrying" (a part's download is about to try again, hub_client::download):
    int attempt = 0;          // the attempt about to start
    int max_attempts = 0;
    uint64_t retry_in_ms = 0; // the wait before it
    std::string reason{};     // why the last attempt failed
};
using pull_progress_fn = std::function<void(const pull_progress &)>;

struct pull_result {
    std::string name;          // the display name it is stored under
    std::string quantization;
    uint64_t size = 0;
    uint64_t transferred = 0;  // bytes received over the network by this pull (resumed bytes excluded)
    bool already_present = false;
};

// The quarantine check as a function, so tests and callers can substitute it.
using checker_fn = std::function<result<quarantine_report>(const quarantine_input &)>;

// Errors: invalid_argument (bad name, not a Hugging Face name, model refused by the quarantine —
// the message carries the reason), not_found (repo, quantization), unavailable (network failures that
// outlasted the retries, cancelled: the partial download is kept and the next pull resumes it), io.
result<pull_result> pull_model(store::model_store & store, const hub::hub_client & hub, const std::string & name,
                               const pull_progress_fn & progress = {}, const std::atomic<bool> * cancel = nullptr,
                               const checker_fn & checker = check_model);

// Creates or replaces `name` as one transaction (pull and create both end here): the candidate `m`,
// whose blobs are already stored, is checked by `checker` beside whatever model holds the name now;
// only a candidate that passes is written (status ready), replacing the old manifest by one rename
// and then collecting the old model's unshared blobs. A candidate that fails changes no existing
// model (it keeps serving, its blobs stay); a name that held nothing is recorded as failed with the
// reason, so list and show say why. Every failure is also an incident. Errors: invalid_argument
// (check_writable refused the manifest, or the check refused the model: the message says why), io.
result<quarantine_report> commit_checked_model(store::model_store & store, const store::model_name & name, store::manifest m,
                                               const checker_fn & checker = check_model);

}  // namespace rc::models
