#include "kv/kv_planner.h"

#include <algorithm>

namespace rc::kv {

reuse_plan snapshot_planner::plan_reuse(std::span<const int32_t> tokens, key_chain & keys, int limit, std::string_view,
                                        std::span<const seq_view>) const {
    // The longest stored snapshot at or before `limit`: a recurrent state cannot be cut back, so only
    // an exact length can be resumed. Each length adds one partial key to the sequence's chain.
    reuse_plan plan;
    for (int n = chained_limit(tokens, keys, limit); n > 0; --n) {
        const block_key key = keys.key_at(tokens, n);
        if (auto w = where(key)) {
            plan.blocks.push_back({key, *w, n, n});
            break;
        }
    }
    return plan;
}

store_plan snapshot_planner::plan_store(std::span<const int32_t> tokens, key_chain & keys, int, int to, int) const {
    // Only the state after the last decoded token exists: the whole sequence is one blob.
    store_plan plan;
    const int n = static_cast<int>(tokens.size());
    if (!index_ || n <= 0 || to != n) return plan;
    const block_key key = keys.key_at(tokens, n);
    if (!where(key)) plan.blocks.push_back({key, 0, n});
    return plan;
}

}  // namespace rc::kv
