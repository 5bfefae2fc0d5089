#pragma once
// Plans one engine step (DESIGN.md §4: plan first, then apply). Pure logic over sequence states so
// the policy is unit-tested without a model: every decoding sequence gets its one token; prefilling
// sequences share the rest of the batch in admission order. While anything is decoding, each
// prefilling sequence gets at most `prefill_budget` tokens per step, so a long prompt cannot stall
// running streams, while a burst of short prompts still starts together; the engine sizes the
// budget from the measured prefill speed (prefill_budget_for).
#include <vector>

namespace rc::engine {

struct schedule_input {
    bool decoding = false;      // false: still prefilling
    int prompt_remaining = 0;   // prefill tokens not yet in the context
};

struct schedule_limits {
    int n_batch = 2048;         // tokens per llama_decode call
    int prefill_budget = 512;   // prefill tokens per sequence per step while any sequence decodes
};

struct schedule_entry {
    int index = 0;              // into the input vector
    int n_tokens = 0;
};

std::vector<schedule_entry> plan_step(const std::vector<schedule_input> & seqs, const schedule_limits & limits);

// Tracks prefill speed (tokens per second of llama_decode wall time, exponentially averaged over
// steps that prefilled at least a few tokens) to size the prefill budget.
class prefill_rate {
  public:
    void observe(int prefill_tokens, int decode_tokens, double seconds);
    double tokens_per_second() const { return rate_; }  // 0 until measured

  private:
    double rate_ = 0;
};

// The prefill budget for one step while others decode: the tokens that fit in `target_ms` at the
// measured rate, within [min_tokens, max_tokens]. `max_tokens` until a rate is known or when
// `target_ms` <= 0 (the bound is off). On a GPU the rate is high and the cap decides; on a CPU,
// where 512 prompt tokens can take seconds, the target keeps decoding streams' token gaps bounded.
int prefill_budget_for(const prefill_rate & rate, double target_ms, int max_tokens, int min_tokens = 16);

}  // namespace rc::engine
