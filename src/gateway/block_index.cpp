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

void host_blocks::prefetch(short_key k) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[home_slot(key_bits(k), slots_.size())]);
}

uint8_t host_blocks::tiers(short_key k) const {
    if (slots_.empty()) return 0;
    return static_cast<uint8_t>(slots_[slot_of(key_bits(k))] & tier_mask);
}

// ---- block_index ----

block_index::host_number block_index::number_of(std::string_view host) {
    auto it = numbers_.find(host);
    if (it == numbers_.end()) it = numbers_.emplace(std::string(host), static_cast<host_number>(numbers_.size())).first;
    return it->second;
}

std::vector<block_index::host_number> block_index::numbers(std::span<const std::string_view> hosts) {
    std::unique_lock lock(mu_);
    std::vector<host_number> out;
    out.reserve(hosts.size());
    for (auto h : hosts) out.push_back(number_of(h));
    return out;
}

namespace {

template <class Tables>
auto * table_of(Tables & tables, size_t n) {
    return n < tables.size() ? tables[n].get() : nullptr;
}

}  // namespace

void block_index::add(const std::string & host, const std::string & model, uint8_t tiers, std::span<const short_key> keys) {
    std::unique_lock lock(mu_);
    const host_number n = number_of(host);
    auto & tables = models_[model];
    if (tables.size() <= n) tables.resize(n + 1);
    if (!tables[n]) tables[n] = std::make_unique<host_entry>();
    host_entry & e = *tables[n];
    for (short_key k : keys)
        if (!e.blocks.add(k, tiers, max_blocks_)) e.overflowed = true;
}

void block_index::remove(const std::string & host, const std::string & model, uint8_t tiers, std::span<const short_key> keys) {
    std::unique_lock lock(mu_);
    auto m = models_.find(model);
    auto n = numbers_.find(host);
    if (m == models_.end() || n == numbers_.end()) return;
    if (auto * e = table_of(m->second, n->second))
        for (short_key k : keys) e->blocks.remove(k, tiers);
}

void block_index::forget(const std::string & host) {
    std::unique_lock lock(mu_);
    auto n = numbers_.find(host);
    if (n == numbers_.end()) return;
    for (auto m = models_.begin(); m != models_.end();) {
        if (n->second < m->second.size()) m->second[n->second].reset();
        const bool empty = std::all_of(m->second.begin(), m->second.end(), [](const auto & e) { return !e; });
        m = empty ? models_.erase(m) : std::next(m);
    }
}

void block_index::forget(const std::string & host, const std::string & model) {
    std::unique_lock lock(mu_);
    auto m = models_.find(model);
    auto n = numbers_.find(host);
    if (m == models_.end() || n == numbers_.end()) return;
    if (n->second < m->second.size()) m->second[n->second].reset();
    if (std::all_of(m->second.begin(), m->second.end(), [](const auto & e) { return !e; })) models_.erase(m);
}

void block_index::walk(const std::string & model, std::span<const short_key> chain, int block_size, std::span<const host_number> hosts,
                       std::vector<host_walk> & out) const {
    out.assign(hosts.size(), {});
    if (chain.empty()) return;
    std::shared_lock lock(mu_);
    auto m = models_.find(model);
    if (m == models_.end()) return;
    // The hosts still holding the prompt after each block, with their tables.
    std::vector<std::pair<size_t, const host_blocks *>> live;
    live.reserve(hosts.size());
    for (size_t i = 0; i < hosts.size(); ++i)
        if (const auto * e = table_of(m->second, hosts[i])) {
            out[i].overflowed = e->overflowed;
            live.emplace_back(i, &e->blocks);
        }
    for (short_key k : chain) {
        if (live.empty()) break;
        for (const auto & [i, t] : live) t->prefetch(k);
        std::erase_if(live, [&](const auto & l) {
            const uint8_t t = l.second->tiers(k);
            if (t == 0) return true;
            auto & held = out[l.first].held;
            (t & tier_context ? held.context : t & tier_host ? held.host : held.disk) += block_size;
            return false;
        });
    }
}

size_t block_index::blocks() const {
    std::shared_lock lock(mu_);
    size_t n = 0;
    for (const auto & [model, tables] : models_)
        for (const auto & e : tables) n += e ? e->blocks.size() : 0;
    return n;
}

size_t block_index::blocks(const std::string & host) const {
    std::shared_lock lock(mu_);
    auto h = numbers_.find(host);
    if (h == numbers_.end()) return 0;
    size_t n = 0;
    for (const auto & [model, tables] : models_)
        if (const auto * e = table_of(tables, h->second)) n += e->blocks.size();
    return n;
}

size_t block_index::bytes() const {
    std::shared_lock lock(mu_);
    size_t n = 0;
    for (const auto & [model, tables] : models_)
        for (const auto & e : tables) n += e ? e->blocks.bytes() : 0;
    return n;
}

}  // namespace rc::gateway
