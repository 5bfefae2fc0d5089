// The gateway's block index (gateway/block_index.h): tiers per block per host, the walk a route
// scores with, forgetting, the per-host bound, and its memory at a realistic fleet size.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <random>

#include "gateway/block_index.h"
#include "gateway/prompt_keys.h"
#include "kv/block_key.h"
#include "util/sha256.h"

using namespace rc;
using namespace rc::gateway;

namespace {

std::vector<short_key> keys(uint64_t seed, size_t n) {
    std::mt19937_64 rng(seed);
    std::vector<short_key> out(n);
    for (auto & k : out) k = rng();
    return out;
}

// What `host` holds of the chain, walked over `hosts` (the walk's answer for it).
host_walk walk_for(block_index & idx, const std::string & model, std::span<const short_key> chain, int block_size, std::string_view host,
                   std::vector<std::string_view> hosts = {}) {
    if (hosts.empty()) hosts = {host};
    std::vector<host_walk> out;
    idx.walk(model, chain, block_size, idx.numbers(hosts), out);
    EXPECT_EQ(out.size(), hosts.size());
    return out.at(static_cast<size_t>(std::find(hosts.begin(), hosts.end(), host) - hosts.begin()));
}

held_prefix held_by(block_index & idx, const std::string & model, std::span<const short_key> chain, int block_size, std::string_view host) {
    return walk_for(idx, model, chain, block_size, host).held;
}

TEST(block_index, a_short_key_is_the_same_from_the_digest_and_from_its_hex) {
    const digest256 d = sha256_of("a block");
    short_key from_hex = 0;
    ASSERT_TRUE(parse_short_key(to_hex(d), from_hex));
    EXPECT_EQ(from_hex, short_key_of(d.data()));
    EXPECT_TRUE(parse_short_key(to_hex(d).substr(0, 16), from_hex));
    EXPECT_FALSE(parse_short_key("0123", from_hex)) << "too short";
    EXPECT_FALSE(parse_short_key("0123456789abcdeg", from_hex)) << "not hex";
    EXPECT_EQ(tier_bit_of("host"), tier_host);
    EXPECT_EQ(tier_bit_of("gpu"), 0);
}

TEST(block_index, a_walk_credits_consecutive_blocks_from_the_start_in_their_best_tier) {
    block_index idx;
    const auto chain = keys(1, 6);
    const std::span<const short_key> all(chain);
    // a: blocks 0-1 in context (also on disk), 2-3 in host RAM, 4 on disk; not 5.
    idx.add("a", "m", tier_disk, all.first(5));
    idx.add("a", "m", tier_context, all.first(2));
    idx.add("a", "m", tier_host, all.subspan(2, 2));
    // b: blocks 0 and 2 (a gap at 1): only block 0 counts.
    idx.add("b", "m", tier_host, all.first(1));
    idx.add("b", "m", tier_host, all.subspan(2, 1));
    // c: not the first block; d: another model.
    idx.add("c", "m", tier_context, all.subspan(1, 4));
    idx.add("d", "other", tier_context, all);

    const std::vector<std::string_view> hosts{"a", "b", "c", "d", "e"};
    std::vector<host_walk> held;
    idx.walk("m", chain, 64, idx.numbers(hosts), held);
    ASSERT_EQ(held.size(), hosts.size()) << "one answer per host asked, in its order";
    EXPECT_EQ(held[0].held.context, 128);
    EXPECT_EQ(held[0].held.host, 128);
    EXPECT_EQ(held[0].held.disk, 64);
    EXPECT_EQ(held[1].held.tokens(), 64);
    EXPECT_EQ(held[2].held.tokens(), 0) << "not the first block: nothing";
    EXPECT_EQ(held[3].held.tokens(), 0) << "another model's blocks";
    EXPECT_EQ(held[4].held.tokens(), 0) << "unknown host";
    idx.walk("m", chain, 64, idx.numbers(std::vector<std::string_view>{"b", "a"}), held);
    EXPECT_EQ(held[0].held.tokens(), 64);
    EXPECT_EQ(held[1].held.tokens(), 320) << "answers follow the order asked";
    EXPECT_EQ(held_by(idx, "nope", chain, 64, "a").tokens(), 0);
    EXPECT_EQ(held_by(idx, "m", {}, 64, "a").tokens(), 0);
    EXPECT_EQ(idx.blocks(), 5u + 2 + 4 + 6);
}

TEST(block_index, a_block_leaving_its_last_tier_is_forgotten_and_can_come_back) {
    block_index idx;
    const auto chain = keys(2, 3);
    idx.add("a", "m", tier_context | tier_disk, chain);
    idx.remove("a", "m", tier_context, chain);
    EXPECT_EQ(held_by(idx, "m", chain, 16, "a").disk, 48) << "still on disk";
    idx.remove("a", "m", tier_disk, std::span(chain).first(1));
    EXPECT_EQ(held_by(idx, "m", chain, 16, "a").tokens(), 0) << "the first block is gone: nothing of the prompt is reusable";
    EXPECT_EQ(idx.blocks(), 2u);
    idx.add("a", "m", tier_host, std::span(chain).first(1));
    EXPECT_EQ(held_by(idx, "m", chain, 16, "a").host, 16);
    EXPECT_EQ(held_by(idx, "m", chain, 16, "a").disk, 32);
    idx.remove("z", "m", tier_host, chain);  // unknown host: nothing happens
    idx.remove("a", "z", tier_host, chain);  // unknown model
    EXPECT_EQ(idx.blocks(), 3u);
}

TEST(block_index, many_blocks_added_and_removed_keep_exactly_what_remains) {
    host_blocks t;
    const auto ks = keys(3, 50000);
    for (auto k : ks) ASSERT_TRUE(t.add(k, tier_host, 1u << 20));
    for (size_t i = 0; i < ks.size(); i += 2) t.remove(ks[i], tier_host);
    EXPECT_EQ(t.size(), ks.size() / 2);
    // New blocks after the removals: the rehash that makes room drops the forgotten slots.
    const auto more = keys(4, 20000);
    for (auto k : more) ASSERT_TRUE(t.add(k, tier_disk, 1u << 20));
    for (size_t i = 0; i < ks.size(); ++i) ASSERT_EQ(t.tiers(ks[i]), i % 2 ? tier_host : 0) << i;
    for (auto k : more) ASSERT_EQ(t.tiers(k), tier_disk);
    EXPECT_EQ(t.size(), ks.size() / 2 + more.size());
    EXPECT_LE(t.bytes(), t.size() * 16) << "at most 16 bytes a block";
}

TEST(block_index, a_host_beyond_its_bound_is_marked_overflowed_until_forgotten) {
    block_index idx(100);
    const auto ks = keys(5, 150);
    idx.add("a", "m", tier_host, ks);
    EXPECT_EQ(idx.blocks(), 100u) << "no more than the bound";
    idx.add("b", "m", tier_host, std::span(ks).first(10));
    EXPECT_TRUE(walk_for(idx, "m", ks, 16, "a", {"a", "b"}).overflowed);
    EXPECT_FALSE(walk_for(idx, "other", ks, 16, "a").overflowed);
    EXPECT_FALSE(walk_for(idx, "m", ks, 16, "b", {"a", "b"}).overflowed);
    idx.forget("a");
    idx.forget("b");
    EXPECT_FALSE(walk_for(idx, "m", ks, 16, "a").overflowed);
    EXPECT_EQ(idx.blocks(), 0u);
    EXPECT_EQ(idx.bytes(), 0u) << "a forgotten host's tables are freed";
}

// 64 hosts × 100k blocks, a quarter of each host's blocks shared with the next host (a common
// system prompt spreads): the memory is bounded by the slot size, and a walk of a long prompt
// over every host is measured (a figure, not asserted: bench/gateway.sh --scale is the benchmark).
TEST(block_index, sixty_four_hosts_of_a_hundred_thousand_blocks_fit_in_about_eleven_bytes_a_block) {
    constexpr int hosts = 64;
    constexpr size_t per_host = 100000;
    block_index idx;
    std::vector<std::vector<short_key>> held(hosts);
    for (int h = 0; h < hosts; ++h) {
        held[h] = keys(100 + h, per_host);
        if (h > 0) std::copy(held[h - 1].begin(), held[h - 1].begin() + per_host / 4, held[h].begin());
        idx.add("host-" + std::to_string(h), "m", h % 3 == 0 ? tier_context : tier_disk, held[h]);
    }
    ASSERT_EQ(idx.blocks(), hosts * per_host);
    const double per_block = static_cast<double>(idx.bytes()) / static_cast<double>(idx.blocks());
    EXPECT_LE(per_block, 16.0);
    // A 4,096-token prompt (64 blocks of 64) that host 10 holds the first 40 blocks of.
    std::vector<short_key> chain(held[10].begin() + per_host / 2, held[10].begin() + per_host / 2 + 64);
    chain.resize(40);
    for (short_key k : keys(999, 24)) chain.push_back(k);
    std::vector<std::string> names;
    for (int h = 0; h < hosts; ++h) names.push_back("host-" + std::to_string(h));
    const auto every = idx.numbers(std::vector<std::string_view>(names.begin(), names.end()));
    constexpr int walks = 2000;
    std::vector<host_walk> out;
    const auto t0 = std::chrono::steady_clock::now();
    size_t found = 0;
    for (int i = 0; i < walks; ++i) {
        idx.walk("m", chain, 64, every, out);
        for (const auto & w : out) found += w.held.tokens() > 0;
    }
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / walks;
    EXPECT_EQ(found, static_cast<size_t>(walks)) << "host 10 alone holds the prompt's first block";
    EXPECT_EQ(held_by(idx, "m", chain, 64, "host-10").tokens(), 40 * 64);
    std::cout << "[ measure  ] " << hosts << " hosts x " << per_host << " blocks: " << idx.bytes() / (1 << 20) << " MiB, " << per_block
              << " bytes a block; a 64-block walk over every host: " << us << " us\n";
}

}  // namespace

// The gateway's chain (prompt_keys.h) from the identity digest a host announces is the chain the
// host computes from its identity (kv/block_key.h), salt included; a malformed digest gives none.
TEST(prompt_chain, is_the_chain_a_host_computes_from_its_identity) {
    const rc::kv::kv_identity id{"fingerprint-of-the-file", "k=f16 v=f16 layers=4"};
    const std::string hex = rc::to_hex(id.digest());
    std::vector<int32_t> tokens(100);
    for (int i = 0; i < 100; ++i) tokens[i] = 7 * i + 3;
    for (const std::string salt : {"", "tenant-a"}) {
        const auto host = rc::kv::full_block_keys(rc::kv::root_key(id, salt), tokens, 16);
        const auto gateway = rc::gateway::prompt_chain(hex, 16, salt, tokens);
        ASSERT_EQ(gateway.size(), 6u);
        ASSERT_EQ(host.size(), gateway.size());
        for (size_t i = 0; i < host.size(); ++i) EXPECT_EQ(gateway[i], rc::gateway::short_key_of(host[i].d.data()));
    }
    EXPECT_NE(rc::gateway::prompt_chain(hex, 16, "a", tokens).front(), rc::gateway::prompt_chain(hex, 16, "b", tokens).front());
    EXPECT_TRUE(rc::gateway::prompt_chain(hex.substr(1), 16, "", tokens).empty());
    EXPECT_TRUE(rc::gateway::prompt_chain(std::string(64, 'g'), 16, "", tokens).empty());
    EXPECT_TRUE(rc::gateway::prompt_chain(hex, 0, "", tokens).empty());
    rc::digest256 back{};
    ASSERT_TRUE(rc::from_hex(hex, back));
    EXPECT_EQ(back, id.digest());
}
