// kv_manager's write-back: one disk write per block, and write-through groups that wait for the
// writes queued before them. The I/O pool's single thread is held on a gate (a promotion's end
// callback runs on it), so "not written yet" is a state the test controls, not a race it hopes for.
#include "kv/kv_manager.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <set>

#include "support/temp_dir.h"
#include "test_keys.h"

using namespace rc::kv;
namespace fs = std::filesystem;

namespace {

using test::key;

blob_ptr blob(uint8_t fill) {
    auto b = std::make_shared<block_blob>();
    b->bytes.assign(4096, fill);
    b->n_tokens = 16;
    return b;
}

class kv_manager_test : public ::testing::Test {
  protected:
    void SetUp() override {
        kv_options o;
        o.host_budget = 1u << 20;
        o.disk_dir = dir;
        o.disk_budget = 16u << 20;
        auto m = kv_manager::open(o, kv_identity{"model", "layout"}, stats);
        ASSERT_TRUE(m) << m.err().message;
        mgr = std::move(m.value());
    }
    void TearDown() override {
        gate.set_value();  // never leave the I/O thread held
        mgr.reset();
    }
    // Holds the I/O thread until TearDown or release().
    void hold_io() {
        auto opened = std::make_shared<std::promise<void>>();
        auto held = opened->get_future();
        mgr->promote_from_disk({}, {}, [this, opened](size_t) {
            opened->set_value();
            released.wait();
        });
        held.wait();
    }
    void release() {
        gate.set_value();
        gate = std::promise<void>();  // TearDown's set_value then has a fresh promise
    }

    rc::test::temp_dir tmp_{"kv-manager"};  // fresh for each test; declared first, so removed after mgr is gone
    const fs::path dir = tmp_.path();
    kv_stats stats;
    std::unique_ptr<kv_manager> mgr;
    std::promise<void> gate;
    std::shared_future<void> released = gate.get_future().share();
};

}  // namespace

TEST_F(kv_manager_test, a_group_joined_after_a_store_waits_for_that_write) {
    hold_io();
    mgr->store(key(1), blob(1));  // no group: a block stored while its sequence ran
    std::promise<size_t> fired;
    auto group = std::make_shared<write_group>([&] { fired.set_value(mgr->disk_blocks()); });
    mgr->join_pending_writes(group);
    group->seal();
    auto done = fired.get_future();
    EXPECT_EQ(done.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout) << "the write is still queued";
    release();
    ASSERT_EQ(done.wait_for(std::chrono::seconds(10)), std::future_status::ready);
    EXPECT_EQ(done.get(), 1u) << "the group fired once the block was a file";
}

TEST_F(kv_manager_test, a_group_with_nothing_pending_fires_at_seal) {
    mgr->store(key(2), blob(2));
    mgr->drain_io();
    bool fired = false;
    auto group = std::make_shared<write_group>([&] { fired = true; });
    mgr->join_pending_writes(group);
    group->seal();
    EXPECT_TRUE(fired);
}

TEST_F(kv_manager_test, a_block_stored_twice_while_queued_is_written_once_and_both_groups_wait) {
    hold_io();
    std::atomic<int> fired{0};
    auto first = std::make_shared<write_group>([&] { ++fired; });
    auto second = std::make_shared<write_group>([&] { ++fired; });
    mgr->store(key(3), blob(3), first);
    mgr->store(key(3), blob(3), second);
    first->seal();
    second->seal();
    EXPECT_EQ(fired.load(), 0);
    release();
    mgr->drain_io();
    EXPECT_EQ(fired.load(), 2);
    EXPECT_EQ(mgr->disk_blocks(), 1u);
    EXPECT_EQ(stats.host_to_disk.blocks.get(), 1u) << "one write";
}

// A restore's disk reads go into the context, not into host RAM as well, and reuse a few buffers
// (faulted in when the tier opened) rather than new memory for each block; a prefetch keeps what it
// reads in host RAM.
TEST_F(kv_manager_test, restore_reads_reuse_their_buffers_and_stay_out_of_host_ram_a_prefetch_keeps_them) {
    constexpr uint8_t n = 12;
    std::vector<block_key> keys;
    for (uint8_t i = 1; i <= n; ++i) {
        mgr->store(key(i), blob(i));
        keys.push_back(key(i));
    }
    mgr->drain_io();
    mgr.reset();  // a restart: host RAM is empty, the blocks are on disk
    kv_options o;
    o.host_budget = 1u << 20;
    o.disk_dir = dir;
    o.disk_budget = 16u << 20;
    mgr = kv_manager::open(o, kv_identity{"model", "layout"}, stats).value();
    ASSERT_EQ(mgr->disk_blocks(), n);

    std::set<const uint8_t *> buffers;
    std::vector<uint8_t> fills;
    std::promise<size_t> ended;
    mgr->promote_from_disk(keys,
                           [&](size_t, blob_ptr b) {  // dropped on return, as the engine drops it once restored
                               buffers.insert(b->bytes.data());
                               fills.push_back(b->bytes[0]);
                               return true;
                           },
                           [&](size_t delivered) { ended.set_value(delivered); });
    EXPECT_EQ(ended.get_future().get(), n);
    ASSERT_EQ(fills.size(), n);
    for (uint8_t i = 0; i < n; ++i) EXPECT_EQ(fills[i], i + 1);
    EXPECT_LT(buffers.size(), n / 2u) << "a few buffers, each used again";
    EXPECT_EQ(mgr->host_blocks(), 0u);
    EXPECT_EQ(stats.disk_to_host.blocks.get(), 0u);

    std::promise<size_t> prefetched;
    mgr->promote_from_disk({key(1), key(2), key(3)}, {}, [&](size_t delivered) { prefetched.set_value(delivered); });
    EXPECT_EQ(prefetched.get_future().get(), 3u);
    EXPECT_EQ(mgr->host_blocks(), 3u);
    EXPECT_EQ(stats.disk_to_host.blocks.get(), 3u);
    EXPECT_EQ(mgr->host_get(key(2))->bytes, blob(2)->bytes);
}

// However fast the disk reads, a restore has at most a few blocks out: the reading waits (on no
// thread) for the caller to drop the blocks it restored, and a caller that gives up ends it.
TEST_F(kv_manager_test, a_restore_reads_only_a_few_blocks_ahead_of_the_caller_and_stops_when_it_gives_up) {
    constexpr uint8_t n = 10;
    for (uint8_t i = 1; i <= n; ++i) mgr->store(key(i), blob(i));
    mgr->drain_io();
    mgr.reset();
    kv_options o;
    o.host_budget = 1u << 20;
    o.disk_dir = dir;
    o.disk_budget = 16u << 20;
    mgr = kv_manager::open(o, kv_identity{"model", "layout"}, stats).value();
    std::vector<block_key> keys;
    for (uint8_t i = 1; i <= n; ++i) keys.push_back(key(i));

    std::mutex mutex;
    std::vector<blob_ptr> held;
    std::promise<size_t> ended;
    mgr->promote_from_disk(keys,
                           [&](size_t, blob_ptr b) {
                               std::lock_guard lock(mutex);
                               held.push_back(std::move(b));
                               return true;
                           },
                           [&](size_t delivered) { ended.set_value(delivered); });
    mgr->drain_io();  // the reading has parked: nothing is queued for an I/O thread
    size_t first_batch;
    {
        std::lock_guard lock(mutex);
        first_batch = held.size();
    }
    EXPECT_GE(first_batch, 1u);
    EXPECT_LE(first_batch, 4u) << "no more than a few blocks out at once";
    EXPECT_EQ(mgr->host_blocks(), 0u);

    // The caller restores and drops what it has: the reading goes on, in order, to the end.
    std::vector<uint8_t> fills;
    auto done = ended.get_future();
    while (done.wait_for(std::chrono::milliseconds(0)) != std::future_status::ready) {
        std::vector<blob_ptr> restored;
        {
            std::lock_guard lock(mutex);
            restored.swap(held);
        }
        for (const auto & b : restored) fills.push_back(b->bytes[0]);
        restored.clear();  // released here: the next read starts
        mgr->drain_io();
    }
    EXPECT_EQ(done.get(), n);
    for (const auto & b : held) fills.push_back(b->bytes[0]);
    held.clear();
    ASSERT_EQ(fills.size(), n);
    for (uint8_t i = 0; i < n; ++i) EXPECT_EQ(fills[i], i + 1);

    // A caller that gives up after two blocks: the reading stops there and says how many it took.
    std::promise<size_t> stopped;
    int offered = 0;
    mgr->promote_from_disk(keys, [&](size_t, blob_ptr) { return ++offered <= 2; }, [&](size_t delivered) { stopped.set_value(delivered); });
    EXPECT_EQ(stopped.get_future().get(), 2u);
    EXPECT_EQ(offered, 3);
}
