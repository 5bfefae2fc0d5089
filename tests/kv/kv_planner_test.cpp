// The KV planner without llama.cpp: a cell ledger stands for the context's pool, a fake index for the
// tiers below. Every branch of plan_room and plan_reuse is driven here; the engine tests then show
// that applying the plans never makes llama.cpp fail to find cells.
#include "kv/kv_planner.h"

#include <gtest/gtest.h>

#include <map>
#include <numeric>

using namespace rc::kv;

namespace {

struct fake_index : block_index {
    std::map<std::string, tier_name> blocks;
    std::optional<tier_name> where(const block_key & key) const override {
        auto it = blocks.find(key.hex());
        if (it == blocks.end()) return std::nullopt;
        return it->second;
    }
    void put(const block_key & k, tier_name t) { blocks[k.hex()] = t; }
};

kv_identity ident() { return {"model", "layout"}; }

std::vector<int32_t> tokens(int n, int seed) {
    std::vector<int32_t> t(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) t[static_cast<size_t>(i)] = seed * 1000 + i;
    return t;
}

planner_options opts(int cells, int block = 4) { return {block, cells}; }

}  // namespace

// ---- the ledger

TEST(cell_ledger, counts_shared_prefix_cells_once_and_frees_them_with_the_last_holder) {
    cell_ledger l(100);
    l.append(1, 10);
    EXPECT_EQ(l.used(), 10);
    l.share_prefix(1, 2, 6);
    l.append(2, 3);
    EXPECT_EQ(l.used(), 13) << "the shared six count once";
    EXPECT_EQ(l.length(2), 9);
    l.trim(1, 0);
    EXPECT_EQ(l.used(), 9) << "sequence 2 still holds the shared prefix";
    l.trim(2, 4);
    EXPECT_EQ(l.used(), 4);
    l.trim(2, 0);
    EXPECT_EQ(l.used(), 0);
    EXPECT_EQ(l.free(), 100);
}

TEST(cell_ledger, reservations_and_simulations_change_nothing_real) {
    cell_ledger l(20);
    l.append(1, 8);
    l.share_prefix(1, 2, 8);
    l.reserve(5);
    EXPECT_EQ(l.free(), 7);
    auto sim = l.simulate();
    EXPECT_EQ(sim.freed_by_trim(1, 0), 0) << "shared with 2";
    EXPECT_EQ(sim.trim(1, 0), 0);
    EXPECT_EQ(sim.freed_by_trim(2, 4), 4) << "after 1 is gone, 2 holds them alone";
    EXPECT_EQ(sim.trim(2, 0), 8);
    EXPECT_EQ(sim.free(), 15);
    EXPECT_EQ(l.used(), 8);
    EXPECT_EQ(l.free(), 7);
    l.unreserve(5);
    EXPECT_EQ(l.free(), 12);
}

TEST(cell_ledger, without_a_limit_nothing_is_ever_short) {
    cell_ledger l(-1);
    l.append(1, 1 << 20);
    EXPECT_FALSE(l.limited());
    EXPECT_GT(l.free(), 1 << 24);
}

// ---- plan_room

namespace {
struct pool {
    block_planner planner;
    cell_ledger ledger;
    std::map<int, std::vector<int32_t>> toks;
    std::vector<seq_view> views;
    explicit pool(int cells, int block = 4, const block_index * index = nullptr) : planner(opts(cells, block), ident(), index), ledger(cells) {}
    room_plan room(const room_request & want) const { return planner.plan_room(want, views, ledger); }
    void add(int h, int n, bool running, uint64_t order, int share_from = -1, int shared = 0) {
        toks[h] = tokens(n, h);
        if (share_from >= 0) {
            ledger.share_prefix(share_from, h, shared);
            ledger.append(h, n - shared);
        } else {
            ledger.append(h, n);
        }
        views.push_back({h, {}, "", running, order});
    }
};
}  // namespace

TEST(kv_planner, room_that_is_free_needs_no_evictions) {
    pool p(100);
    p.add(1, 40, false, 1);
    auto plan = p.room({60, false});
    EXPECT_TRUE(plan.ok);
    EXPECT_TRUE(plan.trims.empty());
}

TEST(kv_planner, idle_tails_go_first_least_recently_used_first_block_by_block) {
    pool p(100, 4);
    p.add(1, 30, false, /*last used*/ 5);
    p.add(2, 30, false, 2);  // the least recently used
    p.add(3, 30, true, 9);
    auto plan = p.room({18, false});
    ASSERT_TRUE(plan.ok);
    ASSERT_EQ(plan.trims.size(), 1u) << "one victim suffices";
    EXPECT_EQ(plan.trims[0].handle, 2);
    EXPECT_EQ(plan.trims[0].keep, 20) << "30 → 28 (partial tail) → 24 → 20: the head stays";
    EXPECT_GE(plan.free_after, 18);
    EXPECT_TRUE(plan.preempt.empty());
}

TEST(kv_planner, shared_prefix_blocks_go_last) {
    pool p(100, 4);
    p.add(1, 40, false, 1);             // donor of a 32-token system prompt, least recently used
    p.add(2, 40, false, 2, 1, 32);      // shares it
    p.add(3, 12, false, 3);
    // 100 - (40 + 8 + 12) = 40 free. Ask for 70: the unique tails of 1 and 2 (8 each) and all of 3
    // free 28; the shared 32 need both holders gone.
    auto plan = p.room({70, false});
    ASSERT_TRUE(plan.ok);
    std::map<int, int> keep;
    for (auto & t : plan.trims) keep[t.handle] = t.keep;
    EXPECT_EQ(keep.at(1), 0);
    EXPECT_EQ(keep.at(2), 0);
    // Asking for less spares the shared head.
    auto small = p.room({56, false});
    ASSERT_TRUE(small.ok);
    for (auto & t : small.trims) {
        if (t.handle == 1 || t.handle == 2) {
            EXPECT_GE(t.keep, 32) << "handle " << t.handle;
        }
    }
}

TEST(kv_planner, running_sequences_are_only_preempted_when_allowed_youngest_first_never_the_oldest) {
    pool p(100, 4);
    p.add(1, 40, true, 1);  // oldest
    p.add(2, 30, true, 2);
    p.add(3, 25, true, 3);  // youngest
    auto no = p.room({20, false});
    EXPECT_FALSE(no.ok);
    EXPECT_TRUE(no.preempt.empty());
    auto yes = p.room({20, true});
    ASSERT_TRUE(yes.ok);
    EXPECT_EQ(yes.preempt, std::vector<int>{3});
    auto more = p.room({50, true});
    ASSERT_TRUE(more.ok);
    EXPECT_EQ(more.preempt, (std::vector<int>{3, 2}));
    auto never = p.room({90, true});
    EXPECT_FALSE(never.ok) << "the oldest keeps running even when that is not enough";
    EXPECT_EQ(never.preempt, (std::vector<int>{3, 2}));
}

TEST(kv_planner, idle_conversations_give_way_before_any_running_one) {
    pool p(100, 4);
    p.add(1, 40, true, 1);
    p.add(2, 30, true, 2);
    p.add(3, 28, false, 7);
    auto plan = p.room({20, true});
    ASSERT_TRUE(plan.ok);
    EXPECT_TRUE(plan.preempt.empty());
    ASSERT_EQ(plan.trims.size(), 1u);
    EXPECT_EQ(plan.trims[0].handle, 3);
}

TEST(kv_planner, whole_snapshot_models_release_whole_sequences) {
    snapshot_planner planner({4, 100}, ident(), nullptr);
    cell_ledger ledger(100);
    ledger.append(1, 60);
    ledger.append(2, 30);
    std::vector<seq_view> v = {{1, {}, "", false, 1}, {2, {}, "", true, 2}};
    auto plan = planner.plan_room({20, false}, v, ledger);
    ASSERT_TRUE(plan.ok);
    ASSERT_EQ(plan.trims.size(), 1u);
    EXPECT_EQ(plan.trims[0].keep, 0);
}

// ---- plan_reuse

namespace {

// A plan for tokens that no sequence holds yet: a fresh key chain, as a lookup makes.
reuse_plan reuse(const kv_planner & planner, std::span<const int32_t> t, int limit, std::string_view salt, std::span<const seq_view> ctx = {}) {
    key_chain keys = planner.chain(salt);
    return planner.plan_reuse(t, keys, limit, salt, ctx);
}

// The blocks to store, with the aliases they make remembered as the engine's executor does.
std::vector<stored_block> to_store(const kv_planner & planner, alias_table & aliases, std::span<const int32_t> t, int from, int to, int prompt_end) {
    key_chain keys = planner.chain("");
    store_plan plan = planner.plan_store(t, keys, from, to, prompt_end);
    for (const auto & [key, alias] : plan.aliases) aliases.remember(key, alias);
    return plan.blocks;
}

}  // namespace

TEST(kv_planner, reuse_takes_the_longest_context_prefix_of_the_same_salt) {
    block_planner planner(opts(1000), ident(), nullptr);
    auto a = tokens(40, 1), b = a;
    b.resize(20);
    auto prompt = a;
    prompt.push_back(7);
    std::vector<seq_view> ctx = {{1, a, "alice", false, 1}, {2, b, "", false, 2}, {3, a, "", true, 3}};
    auto plan = reuse(planner, prompt, static_cast<int>(prompt.size()) - 1, "", ctx);
    EXPECT_EQ(plan.donor, 3);
    EXPECT_EQ(plan.from_context, 40);
    auto other = reuse(planner, prompt, static_cast<int>(prompt.size()) - 1, "mallory", ctx);
    EXPECT_EQ(other.from_context, 0) << "no salt shares with another";
}

TEST(kv_planner, reuse_continues_below_the_context_in_whole_blocks_and_a_partial_tail) {
    fake_index idx;
    block_planner planner(opts(1000, 4), ident(), &idx);
    auto t = tokens(14, 1);
    auto root = planner.root("");
    auto keys = full_block_keys(root, t, 4);  // 3 full blocks
    idx.put(keys[0], tier_name::host);
    idx.put(keys[1], tier_name::disk);
    idx.put(keys[2], tier_name::host);
    idx.put(partial_block_key(keys[2], std::span<const int32_t>(t).subspan(12, 1)), tier_name::host);
    auto plan = reuse(planner, t, 13, "", {});
    ASSERT_EQ(plan.blocks.size(), 4u);
    EXPECT_EQ(plan.reused(), 13);
    EXPECT_TRUE(plan.needs_disk());
    EXPECT_EQ(plan.restore_cells(), 13);
    // With the first 6 tokens in the context, the tiers start at the block holding token 6.
    std::vector<int32_t> head(t.begin(), t.begin() + 6);
    std::vector<seq_view> ctx = {{9, head, "", false, 1}};
    auto mixed = reuse(planner, t, 13, "", ctx);
    EXPECT_EQ(mixed.donor, 9);
    EXPECT_EQ(mixed.from_context, 4);
    EXPECT_EQ(mixed.reused(), 13);
    EXPECT_EQ(mixed.blocks.front().key, keys[1]);
}

TEST(kv_planner, stored_blocks_become_aliases_at_the_prompt_end_and_one_token_before) {
    fake_index idx;
    alias_table aliases(ident(), 4, nullptr);
    block_planner planner(opts(1000, 4), ident(), &idx, &aliases);
    // A conversation of 10 prompt tokens and 4 more of ours; the prompt ends inside block [8, 12).
    auto conv = tokens(14, 3);
    auto stored = to_store(planner, aliases, conv, 0, 14, 10);
    ASSERT_EQ(stored.size(), 4u);  // [0,4) [4,8) [8,12) [12,14)
    for (const auto & b : stored) idx.put(b.key, tier_name::host);
    // A regenerate: the same 10-token prompt reuses 9 tokens (block [8,12) restored, trimmed to 1).
    std::vector<int32_t> regen(conv.begin(), conv.begin() + 10);
    auto r = reuse(planner, regen, 9, "", {});
    EXPECT_EQ(r.reused(), 9);
    EXPECT_EQ(r.blocks.back().key, stored[2].key);
    EXPECT_EQ(r.blocks.back().keep, 1);
    EXPECT_EQ(r.blocks.back().cells, 4);
    EXPECT_EQ(r.restore_cells(), 12) << "the alias block is restored whole before its trim";
    // A resume that replaced our reply: the prompt's 10 tokens are reused.
    auto edited = regen;
    edited.insert(edited.end(), {5, 6, 7});
    auto e = reuse(planner, edited, static_cast<int>(edited.size()) - 1, "", {});
    EXPECT_EQ(e.reused(), 10);
    // Nothing is stored twice.
    EXPECT_TRUE(to_store(planner, aliases, conv, 0, 14, 10).empty());
}

TEST(kv_planner, snapshots_resume_from_the_longest_exact_length) {
    fake_index idx;
    snapshot_planner planner({4, -1}, ident(), &idx);
    auto t = tokens(20, 2);
    idx.put(planner.chain("").key_at(t, 9), tier_name::disk);
    idx.put(planner.chain("").key_at(t, 15), tier_name::host);
    std::vector<seq_view> ctx = {{1, t, "", false, 1}};
    auto p = reuse(planner, t, 14, "", ctx);
    EXPECT_EQ(p.from_context, 0) << "a whole state is never shared in the context";
    ASSERT_EQ(p.blocks.size(), 1u);
    EXPECT_EQ(p.blocks[0].keep, 9);
    EXPECT_EQ(reuse(planner, t, 19, "").reused(), 15);
}

TEST(kv_planner, snapshots_store_the_whole_state_once_and_only_at_its_end) {
    fake_index idx;
    snapshot_planner planner({4, -1}, ident(), &idx);
    auto t = tokens(10, 4);
    key_chain keys = planner.chain("");
    EXPECT_TRUE(planner.plan_store(t, keys, 0, 6, 10).blocks.empty()) << "no state exists after 6 of 10 tokens";
    EXPECT_TRUE(planner.plan_filled(t, keys, 0, 8, 10).blocks.empty()) << "nothing is stored while it runs";
    auto whole = planner.plan_store(t, keys, 4, 10, 10);
    ASSERT_EQ(whole.blocks.size(), 1u);
    EXPECT_EQ(whole.blocks[0].p0, 0) << "the whole sequence, wherever its caller starts";
    EXPECT_EQ(whole.blocks[0].p1, 10);
    EXPECT_EQ(whole.blocks[0].key, planner.chain("").key_at(t, 10));
    idx.put(whole.blocks[0].key, tier_name::host);
    EXPECT_TRUE(planner.plan_store(t, keys, 0, 10, 10).blocks.empty()) << "not stored twice";
    EXPECT_EQ(planner.checkpoint_at(0, 10, {}), 9) << "one token before the prompt's end";
    EXPECT_EQ(planner.checkpoint_at(9, 10, {}), -1);
    EXPECT_EQ(snapshot_planner({4, -1}, ident(), nullptr).checkpoint_at(0, 10, {}), -1) << "nothing below: nothing to keep";
}

TEST(kv_planner, snapshots_checkpoint_at_message_boundaries_and_every_few_blocks) {
    fake_index idx;
    snapshot_planner planner({4, -1, 2}, ident(), &idx);  // a state every 2 blocks: every 8 tokens
    const std::vector<int> boundaries{5, 13, 30, 0, -3, 3};
    std::vector<int> stops;
    for (int at = planner.checkpoint_at(0, 20, boundaries); at >= 0; at = planner.checkpoint_at(at, 20, boundaries)) stops.push_back(at);
    EXPECT_EQ(stops, (std::vector<int>{5, 8, 13, 16, 19}))
        << "boundaries (none shorter than a block), block multiples, the prompt's end - 1; in order, each once";
    EXPECT_EQ(planner.checkpoint_at(13, 20, boundaries), 16) << "resumed from a stored state: the next one after it";
    snapshot_planner no_interval({4, -1, 0}, ident(), &idx);
    EXPECT_EQ(no_interval.checkpoint_at(5, 20, boundaries), 13) << "checkpoint_blocks 0: boundaries and the prompt's end only";
    EXPECT_EQ(no_interval.checkpoint_at(13, 20, boundaries), 19);
    EXPECT_EQ(snapshot_planner({4, -1, 2}, ident(), nullptr).checkpoint_at(0, 20, boundaries), -1) << "nothing below: nothing to keep";
    snapshot_planner wide({16, -1, 0}, ident(), &idx);
    EXPECT_EQ(wide.checkpoint_at(20, 40, std::vector<int>{36}), 36) << "the history's end, 3 tokens before the prompt's: enough for a regenerate";
    EXPECT_EQ(wide.checkpoint_at(36, 40, std::vector<int>{36}), -1);
    EXPECT_EQ(wide.checkpoint_at(20, 40, std::vector<int>{30}), 30) << "9 tokens before it: the prompt's end keeps its own state";
    EXPECT_EQ(wide.checkpoint_at(30, 40, std::vector<int>{30}), 39);
}

TEST(kv_planner, blocks_store_what_a_step_filled_and_never_checkpoint) {
    fake_index idx;
    block_planner planner(opts(1000, 4), ident(), &idx);
    auto t = tokens(11, 5);
    key_chain keys = planner.chain("");
    auto filled = planner.plan_filled(t, keys, 3, 11, 20);
    ASSERT_EQ(filled.blocks.size(), 2u) << "[0,4) and [4,8): full blocks only";
    EXPECT_EQ(filled.blocks[0].p0, 0);
    EXPECT_EQ(filled.blocks[1].p1, 8);
    EXPECT_TRUE(planner.plan_filled(t, keys, 8, 11, 20).blocks.empty()) << "no block filled";
    EXPECT_EQ(planner.checkpoint_at(0, 10, std::vector<int>{4}), -1);
}

TEST(kv_planner, make_picks_the_planner_of_the_memory_layout) {
    fake_index idx;
    auto blocks = kv_planner::make(memory_layout::blocks, opts(100, 4), ident(), &idx);
    auto whole = kv_planner::make(memory_layout::whole_snapshots, opts(100, 4), ident(), &idx);
    EXPECT_NE(dynamic_cast<const block_planner *>(blocks.get()), nullptr);
    EXPECT_NE(dynamic_cast<const snapshot_planner *>(whole.get()), nullptr);
}

// ---- sliding-window and hybrid memories: attention blocks, states beside them

namespace {
// Stores what a plan asks for in the fake index, as the executor would.
void apply(fake_index & idx, const store_plan & plan, tier_name t = tier_name::host) {
    for (const auto & b : plan.blocks) idx.put(b.key, t);
}
}  // namespace

TEST(kv_planner, block_states_store_attention_blocks_as_they_fill_and_a_state_only_at_the_end) {
    fake_index idx;
    block_state_planner planner({4, 100}, ident(), &idx);
    auto t = tokens(10, 6);
    key_chain keys = planner.chain("");
    auto filled = planner.plan_filled(t, keys, 1, 9, 10);
    ASSERT_EQ(filled.blocks.size(), 2u) << "[0,4) and [4,8): full blocks only";
    for (const auto & b : filled.blocks) EXPECT_EQ(b.part, blob_part::attention);
    apply(idx, filled);
    EXPECT_TRUE(planner.plan_store(t, keys, 0, 6, 10).blocks.empty()) << "no state after 6 of 10 tokens, the blocks are stored";
    auto end = planner.plan_store(t, keys, 0, 10, 10);
    ASSERT_EQ(end.blocks.size(), 2u) << "the partial block [8,10) and the state after it";
    EXPECT_EQ(end.blocks[0].part, blob_part::attention);
    EXPECT_EQ(end.blocks[0].p0, 8);
    EXPECT_EQ(end.blocks[0].p1, 10);
    EXPECT_EQ(end.blocks[1].part, blob_part::state);
    EXPECT_EQ(end.blocks[1].p1, 10);
    EXPECT_EQ(end.blocks[1].key, state_key(keys.key_at(t, 10)));
    apply(idx, end);
    EXPECT_TRUE(planner.plan_store(t, keys, 0, 10, 10).blocks.empty()) << "not stored twice";
}

TEST(kv_planner, block_states_resume_at_the_longest_state_whose_blocks_are_all_below) {
    fake_index idx;
    block_state_planner planner({4, 100}, ident(), &idx);
    auto a = tokens(14, 7);
    key_chain ka = planner.chain("");
    // A checkpoint at 6 (a message boundary) and the end of the conversation at 14.
    std::vector<int32_t> at6(a.begin(), a.begin() + 6);
    apply(idx, planner.plan_store(at6, ka, 0, 6, 6));
    apply(idx, planner.plan_store(a, ka, 0, 14, 14));

    // Another conversation sharing the first 7 tokens resumes from the state at 6: one copy of the
    // block [0,4) serves both.
    auto b = a;
    b.resize(7);
    auto more = tokens(5, 8);
    b.insert(b.end(), more.begin(), more.end());
    key_chain kb = planner.chain("");
    auto plan = planner.plan_reuse(b, kb, static_cast<int>(b.size()) - 1, "", {});
    ASSERT_EQ(plan.blocks.size(), 3u);
    EXPECT_EQ(plan.reused(), 6);
    EXPECT_EQ(plan.blocks[0].part, blob_part::attention);
    EXPECT_EQ(plan.blocks[1].keep, 2) << "the partial block [4,6)";
    EXPECT_EQ(plan.blocks[2].part, blob_part::state);
    EXPECT_EQ(plan.blocks[2].keep, 0);
    EXPECT_TRUE(plan.all_or_nothing());
    EXPECT_EQ(plan.restore_cells(), 6);

    // The conversation itself continues from its end.
    auto c = a;
    c.push_back(99);
    c.push_back(98);
    key_chain kc = planner.chain("");
    EXPECT_EQ(planner.plan_reuse(c, kc, static_cast<int>(c.size()) - 1, "", {}).reused(), 14);

    // With a block below the state evicted, that state is no resume point; the one before it is.
    key_chain k0 = planner.chain("");
    k0.extend(c);
    idx.blocks.erase(k0.at(2).hex());  // [8,12)
    key_chain kd = planner.chain("");
    EXPECT_EQ(planner.plan_reuse(c, kd, static_cast<int>(c.size()) - 1, "", {}).reused(), 6);
    EXPECT_TRUE(block_state_planner({4, 100}, ident(), nullptr).plan_reuse(c, kd, 10, "", {}).blocks.empty());
}

TEST(kv_planner, block_states_checkpoint_like_snapshots) {
    fake_index idx;
    block_state_planner planner({4, 100, 2}, ident(), &idx);
    EXPECT_EQ(planner.checkpoint_at(0, 20, std::vector<int>{5}), 5);
    EXPECT_EQ(planner.checkpoint_at(5, 20, std::vector<int>{5}), 8);
    auto made = kv_planner::make(memory_layout::blocks_and_states, opts(100, 4), ident(), &idx);
    EXPECT_NE(dynamic_cast<const block_state_planner *>(made.get()), nullptr);
}
