#include "engine/scheduler.h"

#include <algorithm>

namespace rc::engine {

std::vector<schedule_entry> plan_step(const std::vector<schedule_input> & seqs, const schedule_limits & limits) {
    std::vector<schedule_entry> plan;
    int budget = limits.n_batch;
    bool any_decoding = false;
    for (int i = 0; i < static_cast<int>(seqs.size()) && budget > 0; ++i) {
        if (!seqs[i].decoding) continue;
        plan.push_back({i, 1});
        --budget;
        any_decoding = true;
    }
    for (int i = 0; i < static_cast<int>(seqs.size()) && budget > 0; ++i) {
        if (seqs[i].decoding || seqs[i].prompt_remaining <= 0) continue;
        int cap = any_decoding ? std::min(std::max(1, limits.prefill_budget), budget) : budget;
        int n = std::min(seqs[i].prompt_remaining, cap);
        plan.push_back({i, n});
        budget -= n;
        // Once one sequence is prefilling, others decode in the same step; the cap then applies to
        // the next prefilling sequence as well.
        any_decoding = any_decoding || n > 0;
    }
    return plan;
}

void prefill_rate::observe(int prefill_tokens, int decode_tokens, double seconds) {
    // Steps with only a handful of prompt tokens are dominated by the weight reads of decoding and
    // would understate the rate; the decode tokens stay in the count (a conservative estimate).
    if (prefill_tokens < 8 || seconds <= 0) return;
    double r = (prefill_tokens + decode_tokens) / seconds;
    rate_ = rate_ == 0 ? r : 0.7 * rate_ + 0.3 * r;
}

int prefill_budget_for(const prefill_rate & rate, double target_ms, int max_tokens, int min_tokens) {
    if (target_ms <= 0 || rate.tokens_per_second() <= 0) return max_tokens;
    double fit = rate.tokens_per_second() * target_ms / 1000.0;
    return std::clamp(static_cast<int>(fit), std::min(min_tokens, max_tokens), max_tokens);
}

}  // namespace rc::engine
