#include "gateway/prefix_index.h"

#include <algorithm>

#include "gateway/request_shape.h"

namespace rc::gateway {

std::vector<uint64_t> prefix_chain(const std::string & canonical) {
    std::vector<uint64_t> out;
    uint64_t h = fnv1a("");
    for (size_t at = 0; at + prefix_chunk_bytes <= canonical.size(); at += prefix_chunk_bytes) {
        h = fnv1a(canonical.substr(at, prefix_chunk_bytes), h);
        out.push_back(h);
    }
    return out;
}

prefix_index::prefix_index(size_t capacity) : capacity_(std::max<size_t>(capacity, 1)) {}

void prefix_index::record(const std::vector<uint64_t> & chain, const std::string & host) {
    std::lock_guard lock(mu_);
    for (uint64_t key : chain) {
        auto it = keys_.find(key);
        if (it == keys_.end()) {
            lru_.push_front(key);
            it = keys_.emplace(key, entry{{}, lru_.begin()}).first;
        } else {
            lru_.splice(lru_.begin(), lru_, it->second.lru);
        }
        auto & hosts = it->second.hosts;
        if (std::erase(hosts, host) == 0) ++held_[host];
        hosts.insert(hosts.begin(), host);
        if (hosts.size() > hosts_per_key) {
            --held_[hosts.back()];
            hosts.pop_back();
        }
    }
    while (keys_.size() > capacity_) {
        auto it = keys_.find(lru_.back());
        for (const auto & h : it->second.hosts) --held_[h];
        keys_.erase(it);
        lru_.pop_back();
    }
}

std::map<std::string, double> prefix_index::affinity(const std::vector<uint64_t> & chain, size_t canonical_bytes) const {
    std::map<std::string, double> out;
    if (canonical_bytes == 0) return out;
    std::lock_guard lock(mu_);
    // Keys chain, so the first unknown chunk ends every match.
    for (size_t i = 0; i < chain.size(); ++i) {
        auto it = keys_.find(chain[i]);
        if (it == keys_.end()) break;
        const double share = std::min(1.0, static_cast<double>((i + 1) * prefix_chunk_bytes) / static_cast<double>(canonical_bytes));
        for (const auto & h : it->second.hosts) out[h] = share;
    }
    return out;
}

size_t prefix_index::held(const std::string & host) const {
    std::lock_guard lock(mu_);
    auto it = held_.find(host);
    return it == held_.end() ? 0 : it->second;
}

void prefix_index::forget(const std::string & host) {
    std::lock_guard lock(mu_);
    if (held_.erase(host) == 0) return;
    for (auto & [key, e] : keys_) std::erase(e.hosts, host);
}

size_t prefix_index::size() const {
    std::lock_guard lock(mu_);
    return keys_.size();
}

}  // namespace rc::gateway
