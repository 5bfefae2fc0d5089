#pragma once
// T1: blocks in host RAM under a hard byte budget, least-recently-used out first. Thread-safe (the
// engine thread restores from it, I/O threads fill it with blocks read from disk).
#include <cstddef>
#include <functional>
#include <list>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kv/block_blob.h"
#include "kv/block_key.h"

namespace rc::kv {

class host_store {
  public:
    explicit host_store(size_t budget_bytes) : budget_(budget_bytes) {}

    using entry = std::pair<block_key, blob_ptr>;
    // Told of every block that enters (true) or leaves (false) the store, under the store's lock, in
    // the order of the changes (KV events). Set before the store is shared.
    using change_fn = std::function<void(bool entered, const block_key &)>;
    void on_change(change_fn f) { on_change_ = std::move(f); }

    // Inserts (or refreshes) a block. Returns what was evicted to stay within the budget, LRU
    // first. A blob larger than the whole budget is not stored (returned as if evicted).
    std::vector<entry> put(const block_key & key, blob_ptr blob);
    blob_ptr get(const block_key & key);  // marks it most recently used; null when absent
    bool contains(const block_key & key) const;
    bool erase(const block_key & key);

    size_t bytes_used() const;
    size_t budget() const { return budget_; }
    size_t count() const;
    void each_key(const std::function<void(const block_key &)> & f) const;  // under the lock: f must not call back

  private:
    size_t budget_;
    mutable std::mutex mutex_;
    std::list<entry> lru_;  // front: most recent
    std::unordered_map<block_key, std::list<entry>::iterator, block_key_hash> index_;
    size_t used_ = 0;
    change_fn on_change_;
    void changed(bool entered, const block_key & k) const {
        if (on_change_) on_change_(entered, k);
    }
};

}  // namespace rc::kv
