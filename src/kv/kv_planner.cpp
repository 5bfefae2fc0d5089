#include "kv/kv_planner.h"

#include <algorithm>
#include <climits>

namespace rc::kv {

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

std::unique_ptr<kv_planner> kv_planner::make(memory_layout layout, const planner_options & opts, const kv_identity & id,
                                              const block_index * index, const alias_table * aliases) {
    if (layout == memory_layout::whole_snapshots) return std::make_unique<snapshot_planner>(opts, id, index);
    if (layout == memory_layout::blocks_and_states) return std::make_unique<block_state_planner>(opts, id, index);
    return std::make_unique<block_planner>(opts, id, index, aliases);
}

int kv_planner::chained_limit(std::span<const int32_t> tokens, key_chain & keys, int limit) const {
    if (!index_) return 0;
    limit = std::clamp(limit, 0, static_cast<int>(tokens.size()));
    keys.extend(tokens.subspan(0, static_cast<size_t>(limit)));
    return limit;
}

int kv_planner::state_checkpoint_at(int n_past, int n_prompt, std::span<const int> boundaries) const {
    const int end = n_prompt - 1;
    if (!index_ || end <= n_past) return -1;
    const int B = opts_.block_size;
    // A boundary shorter than a block is not worth a state. The state one token before the prompt's
    // end serves a regenerate; a boundary a few tokens before it (the history's end, before the
    // generation prompt) serves one nearly as well, and one state fewer per request is kept.
    bool end_covered = false;
    for (int b : boundaries) end_covered = end_covered || (b >= B && b < end && end - b <= B / 4);
    int next = end_covered ? INT_MAX : end;
    const int every = opts_.checkpoint_blocks * B;
    if (every > 0 && (n_past / every + 1) * every < end) next = std::min(next, (n_past / every + 1) * every);
    for (int b : boundaries)
        if (b > n_past && b < next && b < end && b >= B) next = b;
    return next == INT_MAX ? -1 : next;
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
    if (cuts_back()) {
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

}  // namespace rc::kv
