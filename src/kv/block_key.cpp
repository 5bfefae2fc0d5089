#include "kv/block_key.h"

#include <algorithm>

namespace rc::kv {

namespace {
constexpr std::string_view k_domain = "rustycage-kv/1";
}

digest256 kv_identity::digest() const {
    sha256 h;
    uint64_t n = model_fingerprint.size();
    h.feed_value(n).feed(model_fingerprint);
    n = layout.size();
    h.feed_value(n).feed(layout);
    return h.finish();
}

block_key root_key(const kv_identity & id, std::string_view cache_salt) { return root_key(id.digest(), cache_salt); }

block_key root_key(const digest256 & identity_digest, std::string_view cache_salt) {
    sha256 h;
    uint64_t n = cache_salt.size();
    h.feed(k_domain).feed_value(identity_digest).feed_value(n).feed(cache_salt);
    return {h.finish()};
}

namespace {
block_key chain(const block_key & prev, char kind, std::span<const int32_t> tokens) {
    sha256 h;
    uint32_t n = static_cast<uint32_t>(tokens.size());
    h.feed_value(prev.d).feed_value(kind).feed_value(n).feed(tokens.data(), tokens.size_bytes());
    return {h.finish()};
}
}  // namespace

block_key full_block_key(const block_key & prev, std::span<const int32_t> tokens) { return chain(prev, 'F', tokens); }
block_key partial_block_key(const block_key & prev, std::span<const int32_t> tokens) { return chain(prev, 'P', tokens); }
block_key state_key(const block_key & at) { return chain(at, 'S', {}); }

std::vector<block_key> full_block_keys(const block_key & root, std::span<const int32_t> tokens, int block_size) {
    std::vector<block_key> keys;
    block_key prev = root;
    for (size_t start = 0; start + block_size <= tokens.size(); start += block_size) {
        prev = full_block_key(prev, tokens.subspan(start, block_size));
        keys.push_back(prev);
    }
    return keys;
}

void key_chain::extend(std::span<const int32_t> tokens) {
    const size_t B = static_cast<size_t>(block_size_);
    for (size_t start = keys_.size() * B; start + B <= tokens.size(); start += B) keys_.push_back(full_block_key(before(blocks()), tokens.subspan(start, B)));
}

void key_chain::truncate(int n_tokens) {
    const size_t keep = static_cast<size_t>(std::max(0, n_tokens) / block_size_);
    if (keys_.size() > keep) keys_.resize(keep);
}

block_key key_chain::key_at(std::span<const int32_t> tokens, int n) {
    extend(tokens.subspan(0, static_cast<size_t>(n)));
    const int full = n / block_size_, rest = n % block_size_;
    if (rest == 0) return before(full);
    return partial_block_key(before(full), tokens.subspan(static_cast<size_t>(full) * block_size_, static_cast<size_t>(rest)));
}

}  // namespace rc::kv
