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

// A sequence's chain, extended as it grows and cut back with it, gives the keys a chain hashed from
// the root in one go would.
TEST(key_chain, extended_in_steps_it_equals_the_chain_from_the_root) {
    const auto root = root_key(id(), "s");
    const auto t = seq(200);
    key_chain grown(root, 32);
    for (size_t n : {0u, 10u, 31u, 32u, 33u, 64u, 100u, 200u}) grown.extend(std::span<const int32_t>(t).subspan(0, n));
    const auto whole = full_block_keys(root, t, 32);
    ASSERT_EQ(grown.blocks(), static_cast<int>(whole.size()));
    for (int i = 0; i < grown.blocks(); ++i) EXPECT_EQ(grown.at(i), whole[static_cast<size_t>(i)]) << i;
    EXPECT_EQ(grown.before(0), root);
    EXPECT_EQ(grown.before(3), whole[2]);
}

TEST(key_chain, cut_back_it_chains_the_new_tokens) {
    const auto root = root_key(id(), "");
    auto t = seq(100);
    key_chain keys(root, 32);
    keys.extend(t);
    EXPECT_EQ(keys.blocks(), 3);
    keys.truncate(70);  // block 2 ([64, 96)) no longer lies within the tokens kept
    EXPECT_EQ(keys.blocks(), 2);
    t.resize(70);
    t.insert(t.end(), 30, 7);  // a different continuation
    keys.extend(t);
    EXPECT_EQ(keys.at(2), full_block_keys(root, t, 32)[2]);
}

TEST(key_chain, the_key_after_n_tokens_is_the_last_full_block_or_the_partial_tail) {
    const auto root = root_key(id(), "");
    const auto t = seq(80);
    key_chain keys(root, 32);
    EXPECT_EQ(keys.key_at(t, 0), root);
    EXPECT_EQ(keys.key_at(t, 64), full_block_keys(root, t, 32)[1]);
    EXPECT_EQ(keys.key_at(t, 70), partial_block_key(full_block_keys(root, t, 32)[1], std::span<const int32_t>(t).subspan(64, 6)));
}
