// The KV event log (kv/kv_events.h) and the tiers that feed it: order, gaps, snapshots that replay
// cleanly, sources coming and going, and the events a host and a disk tier really emit.
#include "kv/kv_events.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <thread>

#include "kv/kv_manager.h"
#include "support/temp_dir.h"
#include "test_keys.h"

using namespace rc::kv;

namespace {

using test::key;

// The state a reader builds: (source, tier, key) held.
using held_set = std::set<std::tuple<uint32_t, tier_name, uint64_t>>;

void apply(held_set & held, const kv_event & e) {
    if (e.what == kv_event::kind::added) held.insert({e.source, e.tier, e.key});
    if (e.what == kv_event::kind::removed) held.erase({e.source, e.tier, e.key});
    if (e.what == kv_event::kind::source_gone) std::erase_if(held, [&](const auto & t) { return std::get<0>(t) == e.source; });
}

TEST(kv_events, events_come_in_order_after_the_sequence_number_asked) {
    kv_event_log log(16);
    const uint32_t s = log.add_source("m", 64, "id", {});
    for (uint8_t i = 0; i < 5; ++i) log.append(s, kv_event::kind::added, tier_name::host, key(i));
    auto all = log.read(0, 100);
    ASSERT_EQ(all.events.size(), 6u) << "source_added, then the five";
    EXPECT_EQ(all.events[0].what, kv_event::kind::source_added);
    EXPECT_EQ(all.events[3].key, event_key(key(2)));
    EXPECT_EQ(all.last, 6u);
    auto after = log.read(4, 1);
    ASSERT_EQ(after.events.size(), 1u) << "at most max";
    EXPECT_EQ(after.events[0].seq, 5u);
    EXPECT_TRUE(log.read(6, 100).events.empty());
    EXPECT_FALSE(log.read(6, 100).gap);
    EXPECT_NE(log.epoch(), kv_event_log().epoch()) << "each log its own epoch";
}

TEST(kv_events, a_reader_behind_the_ring_is_told_to_resync_and_the_appender_never_waits) {
    kv_event_log log(8);
    const uint32_t s = log.add_source("m", 64, "id", {});
    for (int i = 0; i < 100; ++i) log.append(s, kv_event::kind::added, tier_name::disk, key(static_cast<uint8_t>(i)));
    auto late = log.read(50, 100);
    EXPECT_TRUE(late.gap);
    EXPECT_TRUE(late.events.empty());
    EXPECT_EQ(log.gaps(), 1u);
    auto recent = log.read(93, 100);
    EXPECT_FALSE(recent.gap) << "the last 8 are still there";
    EXPECT_EQ(recent.events.size(), 8u);
}

TEST(kv_events, a_read_waits_for_the_next_event) {
    kv_event_log log;
    const uint32_t s = log.add_source("m", 64, "id", {});
    std::thread later([&] { log.append(s, kv_event::kind::added, tier_name::host, key(1)); });
    auto got = log.read(1, 10, std::chrono::seconds(30));
    later.join();
    ASSERT_EQ(got.events.size(), 1u);
    EXPECT_EQ(got.events[0].key, event_key(key(1)));
}

// A snapshot taken while the tiers change, then the events after its sequence number, give exactly
// the tiers' final state.
TEST(kv_events, a_snapshot_and_the_events_after_it_rebuild_the_state_while_it_changes) {
    kv_event_log log(1 << 16);
    std::mutex tier_mu;
    std::set<uint64_t> tier;  // a tier, appending under its own lock as the real ones do
    const uint32_t s = log.add_source("m", 64, "id", [&](const auto & emit) {
        std::lock_guard lock(tier_mu);
        for (uint64_t k : tier) emit(tier_name::host, k);
    });
    std::atomic<bool> done{false};
    std::thread writer([&] {
        for (int i = 0; i < 20000; ++i) {
            std::lock_guard lock(tier_mu);
            const block_key k = key(static_cast<uint8_t>(i % 200), static_cast<uint8_t>(i % 7));
            const bool in = tier.count(event_key(k));
            if (in) tier.erase(event_key(k));
            else tier.insert(event_key(k));
            log.append(s, in ? kv_event::kind::removed : kv_event::kind::added, tier_name::host, k);
        }
        done = true;
    });
    while (log.last_seq() < 5000) std::this_thread::yield();
    auto snap = log.snapshot();
    writer.join();
    held_set held;
    for (const auto & b : snap.blocks) apply(held, b);
    auto rest = log.read(snap.seq, 1 << 20);
    ASSERT_FALSE(rest.gap);
    for (const auto & e : rest.events) apply(held, e);
    held_set want;
    for (uint64_t k : tier) want.insert({s, tier_name::host, k});
    EXPECT_EQ(held, want);
    EXPECT_EQ(snap.sources.at(s).model, "m");
}

TEST(kv_events, a_removed_source_says_so_and_is_never_called_again) {
    kv_event_log log;
    std::atomic<int> calls{0};
    const uint32_t s = log.add_source("m", 32, "id", [&](const auto &) { ++calls; });
    log.snapshot();
    EXPECT_EQ(calls.load(), 1);
    log.remove_source(s);
    const auto events = log.read(0, 10).events;
    ASSERT_EQ(events.size(), 2u);
    EXPECT_EQ(events[1].what, kv_event::kind::source_gone);
    EXPECT_EQ(events[1].source, s);
    log.snapshot();
    EXPECT_EQ(calls.load(), 1);
    EXPECT_TRUE(log.sources().empty());
    log.remove_source(s);  // twice: nothing more
    EXPECT_EQ(log.last_seq(), 2u);
}

blob_ptr blob(uint8_t fill, size_t bytes) {
    auto b = std::make_shared<block_blob>();
    b->bytes.assign(bytes, fill);
    b->n_tokens = 16;
    return b;
}

// The real tiers: a host tier of three blocks and a disk tier of four, fed six blocks.
TEST(kv_events, the_tiers_tell_every_block_that_enters_or_leaves_them) {
    rc::test::temp_dir dir("kv-events");
    auto log = std::make_shared<kv_event_log>();
    kv_stats stats;
    kv_options o;
    o.host_budget = 3 * 4096;
    o.disk_dir = dir.path();
    o.disk_budget = 4 * (4096 + 128);
    o.events = log;
    o.model = "demo";
    {
        auto m = kv_manager::open(o, kv_identity{"model", "layout"}, stats);
        ASSERT_TRUE(m) << m.err().message;
        for (uint8_t i = 0; i < 6; ++i) m.value()->store(key(i), blob(i, 4096));
        m.value()->drain_io();
        held_set held;
        for (const auto & e : log->read(0, 1000).events) apply(held, e);
        const uint32_t s = log->sources().begin()->first;
        EXPECT_EQ(log->sources().at(s).model, "demo");
        EXPECT_EQ(log->sources().at(s).block_size, 64);
        held_set want;
        for (uint8_t i = 3; i < 6; ++i) want.insert({s, tier_name::host, event_key(key(i))});
        for (uint8_t i = 2; i < 6; ++i) want.insert({s, tier_name::disk, event_key(key(i))});
        EXPECT_EQ(held, want) << "host holds the last three, disk the last four";
        // The snapshot says the same.
        held_set snapped;
        for (const auto & b : log->snapshot().blocks) apply(snapped, b);
        EXPECT_EQ(snapped, want);
    }
    EXPECT_EQ(log->read(log->last_seq() - 1, 10).events.at(0).what, kv_event::kind::source_gone) << "the manager closed";
    // Reopened (a restart): the disk tier's blocks are in the new source's snapshot.
    auto m = kv_manager::open(o, kv_identity{"model", "layout"}, stats);
    ASSERT_TRUE(m);
    const auto snap = log->snapshot();
    ASSERT_EQ(snap.sources.size(), 1u);
    EXPECT_EQ(snap.blocks.size(), 4u);
}

// The context's blocks: each call says what the context holds now; what came and went since the
// last one goes out as context-tier events (a key two sequences share once), and a snapshot lists it.
TEST(kv_events, the_context_tells_the_blocks_that_came_and_went_since_it_last_said) {
    auto log = std::make_shared<kv_event_log>();
    kv_stats stats;
    kv_options o;
    o.host_budget = 8 * 4096;
    o.events = log;
    o.model = "demo";
    auto m = kv_manager::open(o, kv_identity{"model", "layout"}, stats);
    ASSERT_TRUE(m) << m.err().message;
    const uint32_t s = log->sources().begin()->first;
    auto context_of = [&](const held_set & held) {
        std::set<uint64_t> out;
        for (const auto & [src, tier, k] : held)
            if (src == s && tier == tier_name::context) out.insert(k);
        return out;
    };
    held_set held;
    uint64_t seen = 0;
    auto read = [&] {
        const auto b = log->read(seen, 1000);
        for (const auto & e : b.events) apply(held, e);
        const size_t n = b.events.size();
        seen = b.last;
        return n;
    };
    read();
    const uint64_t a = event_key(key(1)), b = event_key(key(2)), c = event_key(key(3));
    m.value()->context_holds({a, b, a});  // two sequences share block a
    EXPECT_EQ(read(), 2u);
    EXPECT_EQ(context_of(held), (std::set<uint64_t>{a, b}));
    m.value()->context_holds({a, b});
    EXPECT_EQ(read(), 0u) << "nothing changed, nothing said";
    m.value()->context_holds({a, c});  // b's sequence trimmed, a new one holds c
    EXPECT_EQ(read(), 2u);
    EXPECT_EQ(context_of(held), (std::set<uint64_t>{a, c}));
    held_set snapped;
    for (const auto & e : log->snapshot().blocks) apply(snapped, e);
    EXPECT_EQ(context_of(snapped), (std::set<uint64_t>{a, c}));
    m.value()->context_holds({});
    read();
    EXPECT_TRUE(context_of(held).empty());
}

}  // namespace
