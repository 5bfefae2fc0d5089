#include "kv/kv_planner.h"

#include <algorithm>

namespace rc::kv {

reuse_plan block_state_planner::plan_reuse(std::span<const int32_t> tokens, key_chain & keys, int limit, std::string_view,
                                           std::span<const seq_view>) const {
    // The longest n at or before `limit` with a stored state whose attention blocks are all stored:
    // the leading full blocks, and the partial block up to n where n is not at a block boundary.
    reuse_plan plan;
    limit = chained_limit(tokens, keys, limit);
    const int B = opts_.block_size;
    int full = 0;
    while (full < keys.blocks() && where(keys.at(full))) ++full;
    for (int n = std::min(limit, full * B + B - 1); n > 0; --n) {
        const int whole = n / B, rest = n % B;
        const block_key at = keys.key_at(tokens, n);
        const auto state = where(state_key(at));
        if (!state) continue;
        const auto tail = rest ? where(at) : std::optional<tier_name>(tier_name::host);
        if (!tail) continue;
        for (int i = 0; i < whole; ++i) plan.blocks.push_back({keys.at(i), *where(keys.at(i)), B, B, blob_part::attention});
        if (rest) plan.blocks.push_back({at, *tail, rest, rest, blob_part::attention});
        plan.blocks.push_back({state_key(at), *state, 0, 0, blob_part::state});
        break;
    }
    return plan;
}

store_plan block_state_planner::plan_store(std::span<const int32_t> tokens, key_chain & keys, int, int to, int) const {
    // Such a sequence is never cut back, so it is stored from its start, whatever the caller's `from`.
    store_plan plan;
    const int n = static_cast<int>(tokens.size());
    to = std::min(to, n);
    if (!index_ || to <= 0) return plan;
    const int B = opts_.block_size;
    keys.extend(tokens.subspan(0, static_cast<size_t>(to)));
    for (int i = 0; (i + 1) * B <= to; ++i)
        if (!where(keys.at(i))) plan.blocks.push_back({keys.at(i), i * B, (i + 1) * B, blob_part::attention});
    if (to != n) return plan;  // the state exists only after the last decoded token
    const int whole = to / B, rest = to % B;
    block_key at = keys.before(whole);
    if (rest) {
        at = partial_block_key(at, tokens.subspan(static_cast<size_t>(whole) * B, static_cast<size_t>(rest)));
        if (!where(at)) plan.blocks.push_back({at, whole * B, to, blob_part::attention});
    }
    if (!where(state_key(at))) plan.blocks.push_back({state_key(at), 0, to, blob_part::state});
    return plan;
}

store_plan block_state_planner::plan_filled(std::span<const int32_t> tokens, key_chain & keys, int before, int after, int) const {
    store_plan plan;
    const int B = opts_.block_size;
    const int first = before / B, end = after / B;
    if (!index_ || end <= first) return plan;
    keys.extend(tokens.subspan(0, static_cast<size_t>(end) * B));
    for (int i = first; i < end; ++i)
        if (!where(keys.at(i))) plan.blocks.push_back({keys.at(i), i * B, (i + 1) * B, blob_part::attention});
    return plan;
}

}  // namespace rc::kv
