#pragma once
// Plans one engine step (DESIGN.md §4: plan first, then apply). Pure logic over sequence states so
// the policy is unit-tested without a model: every decoding sequence gets its one token; prefilling
// sequences share the rest of the batch in admission order, each capped to `prefill_chunk` while
// anything is decoding so long prompts cannot stall running streams.
#include <vector>

namespace rc::engine {

struct schedule_input {
    bool decoding = false;      // false: still prefilling
    int prompt_remaining = 0;   // prefill tokens not yet in the context
};

struct schedule_limits {
    int n_batch = 2048;         // tokens per llama_decode call
    int prefill_chunk = 512;    // per-sequence prefill cap while other sequences decode
};

struct schedule_entry {
    int index = 0;              // into the input vector
    int n_tokens = 0;
};

std::vector<schedule_entry> plan_step(const std::vector<schedule_input> & seqs, const schedule_limits & limits);

}  // namespace rc::engine
