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

void step_cost_model::set(double fixed_ms, double per_token_ms) {
    fixed_ms_ = std::max(0.0, fixed_ms);
    per_token_ms_ = per_token_ms > 0 ? per_token_ms : 0;
    small_steps_ = large_steps_ = small_surprises_ = large_surprises_ = 0;
}

void step_cost_model::calibrate(double ms_one_token, double ms_k_tokens, int k) {
    set(std::max(0.0, ms_one_token - std::max(1e-4, (ms_k_tokens - ms_one_token) / std::max(1, k - 1))),
        k > 1 ? std::max(1e-4, (ms_k_tokens - ms_one_token) / (k - 1)) : std::max(1e-4, ms_k_tokens / std::max(1, k)));
}

void step_cost_model::observe(int n_tokens, double ms) {
    if (n_tokens <= 0 || ms <= 0) return;
    constexpr double keep = 0.8;  // weight of the past: a few steps follow a change, one outlier does not
    if (!calibrated()) {
        // Nothing remembered: decode-only steps give `fixed`, the first step of several tokens gives
        // `per_token` (all of the step's time when `fixed` is not known yet: an over-estimate, so
        // chunks grow from small).
        if (n_tokens <= 4) {
            fixed_ms_ = small_steps_++ == 0 ? ms : keep * fixed_ms_ + (1 - keep) * ms;
        } else if (n_tokens >= 8) {
            per_token_ms_ = std::max(1e-4, (ms - (small_steps_ > 0 ? fixed_ms_ : 0.0)) / n_tokens);
            ++large_steps_;
        }
        return;
    }
    // A per-token cost off by an order of magnitude (a damaged or hand-edited file: per_token =
    // 599999 ms) keeps every chunk one token small, so the large steps that would correct it never
    // come: three small steps in a row of which it alone predicts ten times the time, and the model
    // is learned again from nothing, starting with this step.
    if (n_tokens < 16) {
        absurd_steps_ = per_token_ms_ * n_tokens > 10 * ms + 5.0 ? absurd_steps_ + 1 : 0;
        if (absurd_steps_ >= 3) {
            *this = step_cost_model{};
            observe(n_tokens, ms);
            return;
        }
    }
    // A step far from the model (more than twice or less than half, beyond a millisecond of noise)
    // is a surprise; three in a row mean the model is stale (remembered from another load, the
    // machine changed): it jumps to what the steps say instead of averaging its way there.
    auto surprising = [](double model, double seen) { return std::abs(seen - model) > 1.0 && (seen > 2 * model || seen < model / 2); };
    if (n_tokens <= 4) {
        ++small_steps_;
        const double seen = std::max(0.0, ms - per_token_ms_ * n_tokens);
        small_surprises_ = surprising(fixed_ms_, seen) ? small_surprises_ + 1 : 0;
        fixed_ms_ = small_surprises_ >= 3 ? seen : keep * fixed_ms_ + (1 - keep) * seen;
    } else if (n_tokens >= 16) {
        ++large_steps_;
        const double seen = std::max(1e-4, (ms - fixed_ms_) / n_tokens);
        large_surprises_ = surprising(per_token_ms_ * n_tokens, seen * n_tokens) ? large_surprises_ + 1 : 0;
        per_token_ms_ = large_surprises_ >= 3 ? seen : keep * per_token_ms_ + (1 - keep) * seen;
    }
}

int step_cost_model::tokens_within(double ms) const {
    if (!calibrated()) return 0;
    double n = (ms - fixed_ms_) / per_token_ms_;
    if (n < 1) return 0;
    return n > 1e9 ? 1000000000 : static_cast<int>(std::floor(n));
}

int prefill_budget_for(const step_cost_model & cost, double max_step_ms, int n_decoding, int max_chunk, int chunk_align) {
    if (max_step_ms <= 0) return max_chunk;
    if (!cost.calibrated()) return std::min(std::max(1, chunk_align), max_chunk);
    const int fit = cost.tokens_within(max_step_ms) - n_decoding;
    return std::clamp(fit, std::min(std::max(1, chunk_align), max_chunk), max_chunk);
}

}  // namespace rc::engine
