#include "kv/host_store.h"

#include <gtest/gtest.h>

using namespace rc::kv;

namespace {
block_key key(uint8_t n) {
    block_key k;
    k.d[0] = n;
    return k;
}
blob_ptr blob(size_t bytes) {
    auto b = std::make_shared<block_blob>();
    b->bytes.assign(bytes, 7);
    b->n_tokens = 1;
    return b;
}
}  // namespace

TEST(host_store, budget_is_hard_and_lru_goes_first) {
    host_store s(300);
    EXPECT_TRUE(s.put(key(1), blob(100)).empty());
    EXPECT_TRUE(s.put(key(2), blob(100)).empty());
    EXPECT_TRUE(s.put(key(3), blob(100)).empty());
    ASSERT_TRUE(s.get(key(1)));  // 1 is now most recent; 2 is least
    auto evicted = s.put(key(4), blob(150));
    ASSERT_EQ(evicted.size(), 2u);
    EXPECT_EQ(evicted[0].first, key(2));
    EXPECT_EQ(evicted[1].first, key(3));
    EXPECT_LE(s.bytes_used(), s.budget());
    EXPECT_EQ(s.bytes_used(), 250u);
    EXPECT_TRUE(s.contains(key(1)));
    EXPECT_TRUE(s.contains(key(4)));
}

TEST(host_store, equal_keys_are_stored_once) {
    host_store s(1000);
    s.put(key(1), blob(100));
    s.put(key(1), blob(100));
    EXPECT_EQ(s.count(), 1u);
    EXPECT_EQ(s.bytes_used(), 100u);
}

TEST(host_store, oversized_blob_is_refused_and_erase_frees) {
    host_store s(100);
    auto ev = s.put(key(1), blob(101));
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_FALSE(s.contains(key(1)));
    s.put(key(2), blob(60));
    auto held = s.get(key(2));
    EXPECT_TRUE(s.erase(key(2)));
    EXPECT_EQ(s.bytes_used(), 0u);
    EXPECT_EQ(held->bytes.size(), 60u) << "a reader keeps its bytes after eviction";
}
