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
        int cap = any_decoding ? std::min(limits.prefill_chunk, budget) : budget;
        int n = std::min(seqs[i].prompt_remaining, cap);
        plan.push_back({i, n});
        budget -= n;
        // Once one sequence is prefilling, others decode in the same step; the chunk cap then
        // applies to the next prefilling sequence as well.
        any_decoding = any_decoding || n > 0;
    }
    return plan;
}

}  // namespace rc::engine
