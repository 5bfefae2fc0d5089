#pragma once
// The check a downloaded or created model must pass before it may serve (the quarantine): its
// blobs match their digests, its GGUF header is sane, llama.cpp loads it with tensor validation,
// and a short fixed greedy generation gives finite logits, at least one token and a stop reason
// (embedding models: a finite embedding instead). Runs on the calling thread; a few seconds for a
// small model, the time of one load plus a few decode steps for a large one.
#include <string>
#include <vector>

#include "util/result.h"

namespace rc::models {

struct quarantine_input {
    std::vector<std::string> paths;    // model files in order (a split GGUF has several)
    std::vector<std::string> digests;  // "sha256-<hex>" per path; empty entries are not re-hashed
    std::string chat_template;         // the manifest's template override, if any
};

struct quarantine_report {
    std::string architecture;
    int generated_tokens = 0;
    std::string stop_reason;  // "stop" (end of generation) or "length"
    double load_ms = 0, generate_ms = 0;
};

// Errors: invalid_argument with the reason the model is refused ("digest mismatch: …",
// "not a GGUF file: …", "llama.cpp refused to load it …", "non-finite logits at step 2", …).
result<quarantine_report> check_model(const quarantine_input & in);

}  // namespace rc::models
