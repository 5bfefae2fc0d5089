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
block_key full_block_key(const block_key & prev, std::span<const int32_t> tokens);
block_key partial_block_key(const block_key & prev, std::span<const int32_t> tokens);

// The chain of full-block keys of `tokens`: keys[i] covers tokens [i*B, (i+1)*B).
std::vector<block_key> full_block_keys(const block_key & root, std::span<const int32_t> tokens, int block_size);

}  // namespace rc::kv
