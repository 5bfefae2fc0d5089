#pragma once
// Plans one engine step (ARCHITECTURE.md §4: plan first, then apply). Pure logic over sequence states so
// the policy is unit-tested without a model. Stall-free batching (Sarathi-Serve, vLLM's chunked
// prefill): every decoding sequence gets its one token, and the same batch carries one prefill chunk
// of at most `prefill_budget` tokens, taken in admission order (a burst of short prompts shares it).
// The budget comes from a cost model of the step (step_cost_model): remembered from an earlier load
// (engine/step_cost_cache.h), else learned from the first real steps while chunks stay small, so a
// long prompt never stalls running streams for longer than --max-step-ms, and a load costs no timed
// decodes. With nothing decoding no stream waits, and prefill takes the whole batch. A prompt cut into
// chunks is cut at multiples of `chunk_align` tokens (sizes the kernels handle well).
#include <vector>

namespace rc::engine {

struct schedule_input {
    bool decoding = false;      // false: still prefilling
    int prompt_remaining = 0;   // prefill tokens not yet in the context
};

struct schedule_limits {
    int max_tokens = 2048;      // tokens this step may hold: the batch, and the free KV cells
    int prefill_budget = 512;   // prefill tokens of one step while any sequence decodes
    int chunk_align = 16;
};

struct schedule_entry {
    int index = 0;              // into the input vector
    int n_tokens = 0;
};

std::vector<schedule_entry> plan_step(const std::vector<schedule_input> & seqs, const schedule_limits & limits);

// The wall time of one llama_decode as a function of its tokens: t(n) = fixed + per_token * n.
// set() takes a remembered model, calibrate() fits two timed decodes; observe() learns from the steps
// that run (exponential averages: decode-only steps refine `fixed`, steps with many tokens refine
// `per_token`). Not calibrated yet, it learns `fixed` from decode-only steps and `per_token` from the
// first step of at least 8 tokens (an over-estimate while `fixed` is unknown: chunks start small).
// Three steps in a row far from the model (over 2x off) replace it at once: a stale model. Three
// small steps of which `per_token` alone predicts 10x the time forget it (only large steps correct
// `per_token`, and such a model allows none): it is learned again as if nothing were remembered.
class step_cost_model {
  public:
    void set(double fixed_ms, double per_token_ms);
    void calibrate(double ms_one_token, double ms_k_tokens, int k);
    void observe(int n_tokens, double ms);
    bool calibrated() const { return per_token_ms_ > 0; }
    // Steps seen since set()/calibrate() or the start: a few decode-only ones and one of many tokens
    // (a server of long prompts on one slot sees few of those): the model stands on this machine's
    // own steps.
    bool settled() const { return small_steps_ >= 4 && large_steps_ >= 1; }
    // The last steps agree with the model (no surprise pending): worth remembering as it is.
    bool consistent() const { return small_surprises_ == 0 && large_surprises_ == 0; }
    double fixed_ms() const { return fixed_ms_; }
    double per_token_ms() const { return per_token_ms_; }
    double predict_ms(int n_tokens) const { return fixed_ms_ + per_token_ms_ * n_tokens; }
    // The most tokens a step may hold and still take at most `ms` (0 when not even one fits).
    int tokens_within(double ms) const;

  private:
    double fixed_ms_ = 0;
    double per_token_ms_ = 0;
    int small_steps_ = 0, large_steps_ = 0;
    int small_surprises_ = 0, large_surprises_ = 0;  // steps in a row far from the model
    int absurd_steps_ = 0;                           // small steps in a row that per_token alone overshoots 10x
};

// The prefill budget for a step that also decodes `n_decoding` tokens: what keeps the step within
// `max_step_ms`, at least `chunk_align` (progress), at most `max_chunk`. `max_chunk` when the bound
// is off (max_step_ms <= 0); one aligned chunk while the model is not calibrated yet (the step that
// carries it teaches `per_token`).
int prefill_budget_for(const step_cost_model & cost, double max_step_ms, int n_decoding, int max_chunk, int chunk_align);

}  // namespace rc::engine
