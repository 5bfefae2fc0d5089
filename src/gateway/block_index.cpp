#include "gateway/block_index.h"

#include <algorithm>
#include <cstring>
#include <mutex>

namespace rc::gateway {

namespace {

constexpr uint64_t tier_mask = 7;

// The slot bits of a key: its own bits with the low three cleared for the tiers (never 0, which
// marks a slot never used).
uint64_t key_bits(short_key k) {
    const uint64_t bits = k & ~tier_mask;
    return bits == 0 ? tier_mask + 1 : bits;
}

// Chain keys are SHA-256 output: their high bits are uniform, so the slot is a range reduction of
// the key's high 32 bits (a table never nears 2^32 slots).
size_t home_slot(uint64_t bits, size_t capacity) { return static_cast<size_t>(((bits >> 32) * capacity) >> 32); }

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

}  // namespace

uint8_t tier_bit_of(std::string_view name) {
    if (name == "context") return tier_context;
    if (name == "host") return tier_host;
    if (name == "disk") return tier_disk;
    return 0;
}

short_key short_key_of(const uint8_t * digest) {
    short_key k;
    std::memcpy(&k, digest, sizeof k);
    return k;
}

bool parse_short_key(std::string_view hex, short_key & out) {
    if (hex.size() < 2 * sizeof(short_key)) return false;
    uint8_t bytes[sizeof(short_key)];
    for (size_t i = 0; i < sizeof bytes; ++i) {
        const int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return false;
        bytes[i] = static_cast<uint8_t>(hi << 4 | lo);
    }
    out = short_key_of(bytes);
    return true;
}

// ---- host_blocks ----

size_t host_blocks::slot_of(uint64_t bits) const {
    const size_t cap = slots_.size();
    for (size_t i = home_slot(bits, cap);; i = i + 1 == cap ? 0 : i + 1) {
        const uint64_t s = slots_[i];
        if (s == 0 || (s & ~tier_mask) == bits) return i;
    }
}

void host_blocks::rehash(size_t capacity) {
    std::vector<uint64_t> old(capacity, 0);
    old.swap(slots_);
    for (uint64_t s : old)
        if (s & tier_mask) slots_[slot_of(s & ~tier_mask)] = s;
    used_ = live_;
}

bool host_blocks::add(short_key k, uint8_t tiers, size_t max_blocks) {
    tiers &= tier_mask;
    if (tiers == 0) return true;
    const uint64_t bits = key_bits(k);
    if (!slots_.empty()) {
        const size_t i = slot_of(bits);
        if (slots_[i] & tier_mask) {  // held: more tiers
            slots_[i] |= tiers;
            return true;
        }
        if (live_ >= max_blocks) return false;
        if (slots_[i] != 0) {  // forgotten: held again in its old slot
            slots_[i] = bits | tiers;
            ++live_;
            return true;
        }
    } else if (max_blocks == 0) {
        return false;
    }
    // A new slot: keep the table at most three quarters used (probes stay short for the misses
    // most walks end on); a rehash also drops the forgotten blocks.
    if (4 * (used_ + 1) > 3 * slots_.size()) rehash(std::max<size_t>(16, (live_ + 1) * 8 / 5));
    slots_[slot_of(bits)] = bits | tiers;
    ++live_;
    ++used_;
    return true;
}

void host_blocks::remove(short_key k, uint8_t tiers) {
    if (slots_.empty()) return;
    const size_t i = slot_of(key_bits(k));
    uint64_t & s = slots_[i];
    if ((s & tier_mask) == 0) return;
    s &= ~static_cast<uint64_t>(tiers & tier_mask);
    if ((s & tier_mask) == 0) --live_;  // forgotten; its slot stays until the next rehash
}

uint8_t host_blocks::tiers(short_key k) const {
    if (slots_.empty()) return 0;
    return static_cast<uint8_t>(slots_[slot_of(key_bits(k))] & tier_mask);
}

// ---- block_index ----

void block_index::add(const std::string & host, const std::string & model, uint8_t tiers, std::span<const short_key> keys) {
    std::unique_lock lock(mu_);
    host_entry & e = models_[model][host];
    for (short_key k : keys)
        if (!e.blocks.add(k, tiers, max_blocks_)) e.overflowed = true;
}

void block_index::remove(const std::string & host, const std::string & model, uint8_t tiers, std::span<const short_key> keys) {
    std::unique_lock lock(mu_);
    auto m = models_.find(model);
    if (m == models_.end()) return;
    auto h = m->second.find(host);
    if (h == m->second.end()) return;
    for (short_key k : keys) h->second.blocks.remove(k, tiers);
}

void block_index::forget(const std::string & host) {
    std::unique_lock lock(mu_);
    for (auto m = models_.begin(); m != models_.end();) {
        m->second.erase(host);
        m = m->second.empty() ? models_.erase(m) : std::next(m);
    }
}

void block_index::forget(const std::string & host, const std::string & model) {
    std::unique_lock lock(mu_);
    auto m = models_.find(model);
    if (m == models_.end()) return;
    m->second.erase(host);
    if (m->second.empty()) models_.erase(m);
}

std::map<std::string, held_prefix> block_index::walk(const std::string & model, std::span<const short_key> chain, int block_size) const {
    std::map<std::string, held_prefix> out;
    if (chain.empty()) return out;
    std::shared_lock lock(mu_);
    auto m = models_.find(model);
    if (m == models_.end()) return out;
    for (const auto & [host, e] : m->second) {
        held_prefix held;
        for (short_key k : chain) {
            const uint8_t t = e.blocks.tiers(k);
            if (t == 0) break;
            (t & tier_context ? held.context : t & tier_host ? held.host : held.disk) += block_size;
        }
        if (held.tokens() > 0) out.emplace(host, held);
    }
    return out;
}

std::set<std::string> block_index::overflowed(const std::string & model) const {
    std::set<std::string> out;
    std::shared_lock lock(mu_);
    if (auto m = models_.find(model); m != models_.end())
        for (const auto & [host, e] : m->second)
            if (e.overflowed) out.insert(host);
    return out;
}

size_t block_index::blocks() const {
    std::shared_lock lock(mu_);
    size_t n = 0;
    for (const auto & [model, hosts] : models_)
        for (const auto & [host, e] : hosts) n += e.blocks.size();
    return n;
}

size_t block_index::blocks(const std::string & host) const {
    std::shared_lock lock(mu_);
    size_t n = 0;
    for (const auto & [model, hosts] : models_)
        if (auto h = hosts.find(host); h != hosts.end()) n += h->second.blocks.size();
    return n;
}

size_t block_index::bytes() const {
    std::shared_lock lock(mu_);
    size_t n = 0;
    for (const auto & [model, hosts] : models_)
        for (const auto & [host, e] : hosts) n += e.blocks.bytes();
    return n;
}

}  // namespace rc::gateway
