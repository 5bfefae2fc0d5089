#pragma once
// T1: blocks in host RAM under a hard byte budget, least-recently-used out first. Thread-safe (the
// engine thread restores from it, I/O threads fill it with blocks read from disk).
#include <cstddef>
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

    // Inserts (or refreshes) a block. Returns what was evicted to stay within the budget, LRU
    // first. A blob larger than the whole budget is not stored (returned as if evicted).
    std::vector<entry> put(const block_key & key, blob_ptr blob);
    blob_ptr get(const block_key & key);  // marks it most recently used; null when absent
    bool contains(const block_key & key) const;
    bool erase(const block_key & key);

    size_t bytes_used() const;
    size_t budget() const { return budget_; }
    size_t count() const;

  private:
    size_t budget_;
    mutable std::mutex mutex_;
    std::list<entry> lru_;  // front: most recent
    std::unordered_map<block_key, std::list<entry>::iterator, block_key_hash> index_;
    size_t used_ = 0;
};

}  // namespace rc::kv
