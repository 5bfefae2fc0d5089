#include "kv/host_store.h"

namespace rc::kv {

std::vector<host_store::entry> host_store::put(const block_key & key, blob_ptr blob) {
    std::vector<entry> evicted;
    std::lock_guard lock(mutex_);
    const size_t size = blob->bytes.size();
    if (auto it = index_.find(key); it != index_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second);  // equal key, equal bytes: just refresh
        return evicted;
    }
    if (size > budget_) {
        evicted.emplace_back(key, std::move(blob));
        return evicted;
    }
    while (used_ + size > budget_ && !lru_.empty()) {
        auto & victim = lru_.back();
        used_ -= victim.second->bytes.size();
        index_.erase(victim.first);
        changed(false, victim.first);
        evicted.push_back(std::move(victim));
        lru_.pop_back();
    }
    lru_.emplace_front(key, std::move(blob));
    index_[key] = lru_.begin();
    used_ += size;
    changed(true, key);
    return evicted;
}

blob_ptr host_store::get(const block_key & key) {
    std::lock_guard lock(mutex_);
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->second;
}

bool host_store::contains(const block_key & key) const {
    std::lock_guard lock(mutex_);
    return index_.count(key) > 0;
}

bool host_store::erase(const block_key & key) {
    std::lock_guard lock(mutex_);
    auto it = index_.find(key);
    if (it == index_.end()) return false;
    used_ -= it->second->second->bytes.size();
    lru_.erase(it->second);
    index_.erase(it);
    changed(false, key);
    return true;
}

size_t host_store::bytes_used() const {
    std::lock_guard lock(mutex_);
    return used_;
}

void host_store::each_key(const std::function<void(const block_key &)> & f) const {
    std::lock_guard lock(mutex_);
    for (const auto & e : lru_) f(e.first);
}

size_t host_store::count() const {
    std::lock_guard lock(mutex_);
    return index_.size();
}

}  // namespace rc::kv
