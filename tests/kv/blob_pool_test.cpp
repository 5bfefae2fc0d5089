// blob_pool: a dropped blob's buffer is what the next blob of its size gets (no new memory), the
// pool keeps no more than its idle limit, and a blob may outlive its pool.
#include "kv/blob_pool.h"

#include <gtest/gtest.h>

using namespace rc::kv;

TEST(blob_pool, a_dropped_blob_s_buffer_is_reused_by_the_next_of_its_size_or_smaller) {
    auto pool = blob_pool::create(1u << 20);
    auto a = pool->make(4096);
    ASSERT_EQ(a->bytes.size(), 4096u);
    const uint8_t * first = a->bytes.data();
    a.reset();
    EXPECT_EQ(pool->idle_buffers(), 1u);
    auto b = pool->make(4096);
    EXPECT_EQ(b->bytes.data(), first) << "the same buffer, not new memory";
    EXPECT_EQ(pool->idle_buffers(), 0u);
    b.reset();
    auto c = pool->make(1000);  // a partial block fits in a full block's buffer
    EXPECT_EQ(c->bytes.data(), first);
    EXPECT_EQ(c->bytes.size(), 1000u);
    auto d = pool->make(8192);  // nothing idle is large enough
    EXPECT_NE(d->bytes.data(), first);
    EXPECT_EQ(d->bytes.size(), 8192u);
}

TEST(blob_pool, the_smallest_idle_buffer_that_fits_is_taken) {
    auto pool = blob_pool::create(1u << 20);
    auto big = pool->make(64 * 1024), small = pool->make(4096);
    const uint8_t * small_data = small->bytes.data();
    big.reset();
    small.reset();
    auto again = pool->make(4096);
    EXPECT_EQ(again->bytes.data(), small_data) << "the 64 KiB buffer stays for a block that needs it";
}

TEST(blob_pool, idle_buffers_beyond_the_limit_are_freed) {
    auto pool = blob_pool::create(10000);
    std::vector<std::shared_ptr<block_blob>> held;
    for (int i = 0; i < 4; ++i) held.push_back(pool->make(4096));
    held.clear();
    EXPECT_EQ(pool->idle_buffers(), 2u);
    EXPECT_LE(pool->idle_bytes(), 10000u);
}

TEST(blob_pool, a_blob_outlives_its_pool) {
    auto pool = blob_pool::create(1u << 20);
    blob_ptr kept = pool->make(100);
    pool.reset();
    EXPECT_EQ(kept->bytes.size(), 100u);
    kept.reset();  // its buffer is freed, not handed to a pool that is gone (ASan would say)
}

TEST(blob_pool, reserved_buffers_are_what_the_first_blobs_get) {
    auto pool = blob_pool::create(1u << 20);
    pool->reserve(3, 4096);
    EXPECT_EQ(pool->idle_buffers(), 3u);
    std::vector<std::shared_ptr<block_blob>> made;
    for (int i = 0; i < 3; ++i) made.push_back(pool->make(4096));
    EXPECT_EQ(pool->idle_buffers(), 0u) << "all three came from the reserve";
    pool->reserve(1000, 4096);  // no more than the idle limit
    EXPECT_LE(pool->idle_bytes(), 1u << 20);
}
