#pragma once
// Block keys: a SHA-256 hash chain over what determines a block's KV bytes (ARCHITECTURE.md §5):
//   key_0 = H("rustycage-kv/1", identity, cache_salt)
//   key_i = H(key_{i-1}, "full", tokens of block i)          full blocks of `block_size` tokens
//   tail  = H(key_{k},   "part", tokens of the partial tail)  the tail that does not fill a block
// Equal keys mean byte-identical KV, so equal prefixes share blocks across conversations and users,
// and different salts never do. Pure logic, no llama.cpp.
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/sha256.h"

namespace rc::kv {

struct block_key {
    digest256 d{};
    bool operator==(const block_key &) const = default;
    std::string hex() const { return to_hex(d); }
};

struct block_key_hash {
    size_t operator()(const block_key & k) const {
        size_t h;
        static_assert(sizeof h <= sizeof k.d);
        std::memcpy(&h, k.d.data(), sizeof h);
        return h;
    }
};

// Everything that changes the bytes of a block besides its tokens: model fingerprint and KV layout
// (cell types, layer count, head dims, RoPE, V layout). Two contexts with equal identities can
// exchange blocks.
struct kv_identity {
    std::string model_fingerprint;
    std::string layout;
    digest256 digest() const;
};

block_key root_key(const kv_identity & id, std::string_view cache_salt);
// The same from the identity's digest (what a host announces in its KV events: a reader computes
// the host's keys without its model file).
block_key root_key(const digest256 & identity_digest, std::string_view cache_salt);
block_key full_block_key(const block_key & prev, std::span<const int32_t> tokens);
block_key partial_block_key(const block_key & prev, std::span<const int32_t> tokens);
// The key of the sliding-window or recurrent state after the tokens that `at` (a full or partial
// block key) ends with, kept beside their attention blocks (kv_planner.h, blocks_and_states).
block_key state_key(const block_key & at);

// The chain of full-block keys of `tokens`: keys[i] covers tokens [i*B, (i+1)*B).
std::vector<block_key> full_block_keys(const block_key & root, std::span<const int32_t> tokens, int block_size);

// The full-block keys of one growing token sequence, computed once and extended as it grows —
// never rehashed from the root. Its owner keeps it in step with the tokens: each call passes the
// sequence's tokens as they are now, which must begin with the tokens already chained (a sequence
// that was cut back calls truncate() first).
class key_chain {
  public:
    key_chain() = default;
    key_chain(const block_key & root, int block_size) : root_(root), block_size_(block_size) {}

    // Chains the full blocks of `tokens` not chained yet.
    void extend(std::span<const int32_t> tokens);
    // Forgets the blocks that do not lie wholly within the first `n_tokens` tokens.
    void truncate(int n_tokens);

    int block_size() const { return block_size_; }
    int blocks() const { return static_cast<int>(keys_.size()); }
    const block_key & root() const { return root_; }
    const block_key & at(int i) const { return keys_[static_cast<size_t>(i)]; }  // block i, [i*B, (i+1)*B)
    const block_key & before(int i) const { return i == 0 ? root_ : at(i - 1); }  // what block i chains from
    // The key of the state after exactly `n` tokens: block n/B-1's, or the partial tail's after it.
    // Extends the chain to `n` first.
    block_key key_at(std::span<const int32_t> tokens, int n);

  private:
    block_key root_;
    int block_size_ = 64;
    std::vector<block_key> keys_;
};

}  // namespace rc::kv
