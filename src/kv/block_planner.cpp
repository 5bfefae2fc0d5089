#include "kv/kv_planner.h"

#include <algorithm>

namespace rc::kv {

namespace {

int common_prefix(std::span<const int32_t> a, std::span<const int32_t> b, int limit) {
    const int n = std::min({static_cast<int>(a.size()), static_cast<int>(b.size()), limit});
    int i = 0;
    while (i < n && a[static_cast<size_t>(i)] == b[static_cast<size_t>(i)]) ++i;
    return i;
}

}  // namespace

reuse_plan block_planner::plan_reuse(std::span<const int32_t> tokens, key_chain & keys, int limit, std::string_view salt,
                                  std::span<const seq_view> context) const {
    reuse_plan plan;
    limit = std::min(limit, static_cast<int>(tokens.size()));
    if (limit <= 0) return plan;
    for (const auto & o : context) {
        if (o.salt != salt) continue;
        int n = common_prefix(o.tokens, tokens, limit);
        if (n > plan.from_context) {
            plan.from_context = n;
            plan.donor = o.handle;
        }
    }
    if (!index_) return plan;

    // Below the context: consecutive whole blocks from the block holding the context prefix's end,
    // then the longest partial tail (a resumed conversation's last, unfilled block) or prompt-end alias.
    const int B = opts_.block_size;
    const int start = (plan.from_context / B) * B;
    keys.extend(tokens.subspan(0, static_cast<size_t>(limit)));
    reuse_plan tiers;
    int covered = start;
    while (covered + B <= limit) {
        const block_key & key = keys.at(covered / B);
        auto w = where(key);
        if (!w) break;
        tiers.blocks.push_back({key, *w, B, B});
        covered += B;
    }
    const block_key & prev = keys.before(covered / B);
    for (int m = std::min(B - 1, limit - covered); m > 0; --m) {
        auto key = partial_block_key(prev, tokens.subspan(static_cast<size_t>(covered), static_cast<size_t>(m)));
        int cells = m;
        auto w = where(key);
        if (!w) {
            auto a = aliases_ ? aliases_->find(key) : std::nullopt;
            if (!a || a->from != covered) continue;
            key = a->target;
            cells = a->cells;
            w = where(key);
        }
        if (w) {
            tiers.blocks.push_back({key, *w, m, cells});
            covered += m;
            break;
        }
    }
    if (covered > plan.from_context) {
        tiers.from_context = start;
        tiers.donor = start > 0 ? plan.donor : -1;
        return tiers;
    }
    return plan;
}

store_plan block_planner::plan_store(std::span<const int32_t> tokens, key_chain & keys, int from, int to, int prompt_end) const {
    store_plan plan;
    auto & out = plan.blocks;
    to = std::min(to, static_cast<int>(tokens.size()));
    const int B = opts_.block_size;
    auto resume_points_in = [&](const block_key & prev, int p0, int p1, const block_key & target) {
        for (int r : {prompt_end - 1, prompt_end}) {
            if (r <= p0 || r >= p1) continue;  // at a block boundary the block's own key matches
            auto key = partial_block_key(prev, tokens.subspan(static_cast<size_t>(p0), static_cast<size_t>(r - p0)));
            plan.aliases.push_back({key, {target, p0, p1 - p0}});
        }
    };
    keys.extend(tokens.subspan(0, static_cast<size_t>(to)));
    int p = std::max(0, from) / B * B;
    for (; p + B <= to; p += B) {
        const block_key & key = keys.at(p / B);
        if (p >= from) {
            if (!where(key)) out.push_back({key, p, p + B});
            resume_points_in(keys.before(p / B), p, p + B, key);
        }
    }
    if (p < to && p >= from) {
        const block_key & prev = keys.before(p / B);
        auto key = partial_block_key(prev, tokens.subspan(static_cast<size_t>(p), static_cast<size_t>(to - p)));
        if (!where(key)) out.push_back({key, p, to});
        resume_points_in(prev, p, to, key);
    }
    return plan;
}

store_plan block_planner::plan_filled(std::span<const int32_t> tokens, key_chain & keys, int before, int after, int prompt_end) const {
    const int B = opts_.block_size;
    const int from = before / B * B, to = after / B * B;
    if (to <= from) return {};
    return plan_store(tokens, keys, from, to, prompt_end);
}

}  // namespace rc::kv
