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

int reuse_plan::reused() const {
    int n = from_context;
    for (const auto & b : blocks) n += b.keep;
    return n;
}

int reuse_plan::restore_cells() const {
    int n = 0;
    for (const auto & b : blocks) n += b.keep;
    // Only the last block can be an alias holding more than it keeps; it is trimmed after its restore.
    if (!blocks.empty()) n += std::max(0, blocks.back().cells - blocks.back().keep);
    return n;
}

bool reuse_plan::needs_disk() const {
    return std::any_of(blocks.begin(), blocks.end(), [](const reuse_block & b) { return b.tier == tier_name::disk; });
}

reuse_plan kv_planner::plan_reuse(std::span<const int32_t> tokens, key_chain & keys, int limit, std::string_view salt,
                                  std::span<const seq_view> context) const {
    reuse_plan plan;
    limit = std::min(limit, static_cast<int>(tokens.size()));
    if (limit <= 0) return plan;
    if (!opts_.whole_snapshots) {
        for (const auto & o : context) {
            if (o.salt != salt) continue;
            int n = common_prefix(o.tokens, tokens, limit);
            if (n > plan.from_context) {
                plan.from_context = n;
                plan.donor = o.handle;
            }
        }
    }
    if (!index_) return plan;
    if (opts_.whole_snapshots) return plan_snapshot(tokens, keys, limit);

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

room_plan kv_planner::plan_room(const room_request & want, std::span<const seq_view> seqs, const cell_ledger & ledger) const {
    room_plan plan;
    auto sim = ledger.simulate();
    auto done = [&] { return sim.free() >= want.cells; };
    auto record = [&](int handle, int keep) {
        for (auto & t : plan.trims) {
            if (t.handle == handle) {
                t.keep = keep;
                return;
            }
        }
        plan.trims.push_back({handle, keep});
    };
    std::vector<const seq_view *> idle, running;
    for (const auto & s : seqs) (s.running ? running : idle).push_back(&s);
    std::sort(idle.begin(), idle.end(), [](const seq_view * a, const seq_view * b) { return a->order < b->order; });
    std::sort(running.begin(), running.end(), [](const seq_view * a, const seq_view * b) { return a->order > b->order; });

    // 1. Tail blocks of idle conversations, least recently used first, while they free cells of their own.
    const int B = opts_.block_size;
    if (!opts_.whole_snapshots) {
        for (const auto * v : idle) {
            int len = sim.length(v->handle);
            while (!done() && len > 0) {
                const int keep = (len - 1) / B * B;
                if (sim.freed_by_trim(v->handle, keep) == 0) break;  // the rest is shared with others
                sim.trim(v->handle, keep);
                len = keep;
                record(v->handle, keep);
            }
            if (done()) break;
        }
    }
    // 2. Whole idle conversations: those that still free cells first, then those whose cells are shared
    //    (releasing every holder frees a shared prefix).
    for (int pass = 0; pass < 2 && !done(); ++pass) {
        for (const auto * v : idle) {
            if (done()) break;
            if (sim.length(v->handle) == 0) continue;
            if (pass == 0 && sim.freed_by_trim(v->handle, 0) == 0) continue;
            sim.trim(v->handle, 0);
            record(v->handle, 0);
        }
    }
    // 3. Running sequences, youngest first; the oldest always keeps running (it alone fits the pool).
    if (want.may_preempt && !done()) {
        for (size_t i = 0; i + 1 < running.size() && !done(); ++i) {
            sim.trim(running[i]->handle, 0);
            plan.preempt.push_back(running[i]->handle);
        }
    }
    plan.ok = done();
    plan.free_after = sim.free();
    return plan;
}

store_plan kv_planner::plan_store(std::span<const int32_t> tokens, key_chain & keys, int from, int to, int prompt_end) const {
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

reuse_plan kv_planner::plan_snapshot(std::span<const int32_t> tokens, key_chain & keys, int limit) const {
    // The longest stored snapshot at or before `limit`: a recurrent state cannot be cut back, so only
    // an exact length can be resumed. Each length adds one partial key to the sequence's chain.
    reuse_plan plan;
    limit = std::min(limit, static_cast<int>(tokens.size()));
    if (limit <= 0) return plan;
    const int B = opts_.block_size;
    keys.extend(tokens.subspan(0, static_cast<size_t>(limit)));
    for (int n = limit; n > 0; --n) {
        const block_key & prev = keys.before(n / B);
        auto key = n % B == 0 ? prev : partial_block_key(prev, tokens.subspan(static_cast<size_t>(n / B) * B, static_cast<size_t>(n % B)));
        if (auto w = where(key)) {
            plan.blocks.push_back({key, *w, n, n});
            break;
        }
    }
    return plan;
}

}  // namespace rc::kv
