#include "kv/alias_table.h"

#include <cstring>

#include "kv/kv_manager.h"

namespace rc::kv {

namespace {

constexpr size_t k_max_aliases = 4096;

// Persisted record: identity digest, alias key, target key, first token, target's tokens.
constexpr size_t k_record_bytes = 32 + 32 + 32 + 4 + 4;

std::vector<uint8_t> encode(const digest256 & ident, const block_key & key, const block_alias & a) {
    std::vector<uint8_t> rec(k_record_bytes);
    std::memcpy(rec.data(), ident.data(), 32);
    std::memcpy(rec.data() + 32, key.d.data(), 32);
    std::memcpy(rec.data() + 64, a.target.d.data(), 32);
    std::memcpy(rec.data() + 96, &a.from, 4);
    std::memcpy(rec.data() + 100, &a.cells, 4);
    return rec;
}

}  // namespace

alias_table::alias_table(const kv_identity & id, int block_size, kv_manager * tiers)
    : ident_(id.digest()), block_size_(block_size), tiers_(tiers && tiers->disk_enabled() ? tiers : nullptr) {
    load();
}

std::optional<block_alias> alias_table::find(const block_key & alias_key) const {
    auto it = aliases_.find(alias_key);
    if (it == aliases_.end()) return std::nullopt;
    return it->second;
}

void alias_table::remember(const block_key & alias_key, const block_alias & a) {
    if (aliases_.count(alias_key)) return;
    add(alias_key, a);
    if (tiers_) tiers_->append_record(encode(ident_, alias_key, a));
}

void alias_table::add(const block_key & alias_key, const block_alias & a) {
    if (!aliases_.emplace(alias_key, a).second) return;
    order_.push_back(alias_key);
    if (order_.size() > k_max_aliases) {
        aliases_.erase(order_.front());
        order_.pop_front();
    }
}

void alias_table::load() {
    if (!tiers_) return;
    auto records = tiers_->read_records();
    for (auto & rec : records) {
        if (rec.size() != k_record_bytes || std::memcmp(rec.data(), ident_.data(), 32) != 0) continue;
        block_key key;
        block_alias a;
        std::memcpy(key.d.data(), rec.data() + 32, 32);
        std::memcpy(a.target.d.data(), rec.data() + 64, 32);
        std::memcpy(&a.from, rec.data() + 96, 4);
        std::memcpy(&a.cells, rec.data() + 100, 4);
        if (a.from < 0 || a.cells <= 0 || a.cells > block_size_) continue;
        add(key, a);
    }
    // The log only grows; once it holds far more than is kept, rewrite it with what is kept.
    if (records.size() > 2 * k_max_aliases) {
        std::vector<std::vector<uint8_t>> kept;
        for (const auto & k : order_) kept.push_back(encode(ident_, k, aliases_.at(k)));
        tiers_->rewrite_records(kept);
    }
}

}  // namespace rc::kv
