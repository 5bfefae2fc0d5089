#include "engine/scheduler.h"

#include <algorithm>
#include <cmath>

namespace rc::engine {

std::vector<schedule_entry> plan_step(const std::vector<schedule_input> & seqs, const schedule_limits & limits) {
    std::vector<schedule_entry> plan;
    int room = limits.max_tokens;
    bool any_decoding = false;
    for (int i = 0; i < static_cast<int>(seqs.size()) && room > 0; ++i) {
        if (!seqs[i].decoding) continue;
        plan.push_back({i, 1});
        --room;
        any_decoding = true;
    }
    // One prefill chunk: bounded while streams decode, the whole batch when none does.
    int budget = any_decoding ? std::min(std::max(1, limits.prefill_budget), room) : room;
    const int align = std::max(1, limits.chunk_align);
    for (int i = 0; i < static_cast<int>(seqs.size()) && budget > 0; ++i) {
        if (seqs[i].decoding || seqs[i].prompt_remaining <= 0) continue;
        int n = std::min(seqs[i].prompt_remaining, budget);
        const bool cut = n < seqs[i].prompt_remaining;
        if (cut && n >= align) n = n / align * align;
        plan.push_back({i, n});
        budget -= n;
        if (cut) break;  // the chunk ends inside this prompt; the next one waits for the next step
    }
    return plan;
}

void step_cost_model::calibrate(double ms_one_token, double ms_k_tokens, int k) {
    per_token_ms_ = k > 1 ? std::max(1e-4, (ms_k_tokens - ms_one_token) / (k - 1)) : std::max(1e-4, ms_k_tokens / std::max(1, k));
    fixed_ms_ = std::max(0.0, ms_one_token - per_token_ms_);
}

void step_cost_model::observe(int n_tokens, double ms) {
    if (n_tokens <= 0 || ms <= 0) return;
    constexpr double keep = 0.8;  // weight of the past: a few steps follow a change, one outlier does not
    if (!calibrated()) {
        // Not calibrated (calibration failed): learn from what runs, starting with a decode-bound guess.
        per_token_ms_ = ms / n_tokens;
        fixed_ms_ = 0;
        return;
    }
    if (n_tokens <= 4) {
        fixed_ms_ = keep * fixed_ms_ + (1 - keep) * std::max(0.0, ms - per_token_ms_ * n_tokens);
    } else if (n_tokens >= 32) {
        per_token_ms_ = keep * per_token_ms_ + (1 - keep) * std::max(1e-4, (ms - fixed_ms_) / n_tokens);
    }
}

int step_cost_model::tokens_within(double ms) const {
    if (!calibrated()) return 0;
    double n = (ms - fixed_ms_) / per_token_ms_;
    if (n < 1) return 0;
    return n > 1e9 ? 1000000000 : static_cast<int>(std::floor(n));
}

int prefill_budget_for(const step_cost_model & cost, double max_step_ms, int n_decoding, int max_chunk, int chunk_align) {
    if (max_step_ms <= 0 || !cost.calibrated()) return max_chunk;
    const int fit = cost.tokens_within(max_step_ms) - n_decoding;
    return std::clamp(fit, std::min(std::max(1, chunk_align), max_chunk), max_chunk);
}

}  // namespace rc::engine
