#include "kv/block_key.h"

#include <gtest/gtest.h>

using namespace rc::kv;

namespace {
kv_identity id() { return {"model-abc", "layout-f16-4x2x32"}; }
std::vector<int32_t> seq(int n, int start = 0) {
    std::vector<int32_t> v(n);
    for (int i = 0; i < n; ++i) v[i] = start + i;
    return v;
}
}  // namespace

TEST(block_key, equal_prefixes_share_keys) {
    auto root = root_key(id(), "");
    auto a = seq(100), b = seq(100);
    b[70] = -1;  // differs in the third block of 32
    auto ka = full_block_keys(root, a, 32), kb = full_block_keys(root, b, 32);
    ASSERT_EQ(ka.size(), 3u);
    EXPECT_EQ(ka[0], kb[0]);
    EXPECT_EQ(ka[1], kb[1]);
    EXPECT_NE(ka[2], kb[2]);
}

TEST(block_key, a_key_commits_to_its_whole_prefix) {
    auto root = root_key(id(), "");
    auto a = seq(64), b = seq(64);
    b[0] = 999;  // only the first block differs
    EXPECT_NE(full_block_keys(root, a, 32)[1], full_block_keys(root, b, 32)[1]);
}

TEST(block_key, salts_identities_and_kinds_never_collide) {
    auto t = seq(32);
    EXPECT_NE(root_key(id(), "alice"), root_key(id(), "bob"));
    EXPECT_NE(root_key(id(), ""), root_key({"model-abc", "layout-f32"}, ""));
    EXPECT_NE(root_key(id(), ""), root_key({"model-xyz", "layout-f16-4x2x32"}, ""));
    // Length-prefixed fields: moving bytes between fingerprint and layout changes the key.
    EXPECT_NE(root_key({"ab", "c"}, ""), root_key({"a", "bc"}, ""));
    auto root = root_key(id(), "");
    EXPECT_NE(full_block_key(root, t), partial_block_key(root, t));
    EXPECT_NE(full_block_keys(root_key(id(), "alice"), t, 32)[0], full_block_keys(root_key(id(), "bob"), t, 32)[0]);
}

TEST(block_key, only_full_blocks_are_chained) {
    auto root = root_key(id(), "");
    EXPECT_EQ(full_block_keys(root, seq(31), 32).size(), 0u);
    EXPECT_EQ(full_block_keys(root, seq(64), 32).size(), 2u);
    EXPECT_EQ(full_block_keys(root, seq(95), 32).size(), 2u);
    EXPECT_EQ(root.hex().size(), 64u);
}
