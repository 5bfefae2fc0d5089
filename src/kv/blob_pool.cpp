#include "kv/blob_pool.h"

namespace rc::kv {

std::shared_ptr<blob_pool> blob_pool::create(size_t max_idle_bytes) { return std::shared_ptr<blob_pool>(new blob_pool(max_idle_bytes)); }

std::shared_ptr<block_blob> blob_pool::make(size_t n) {
    auto * blob = new block_blob;
    {
        std::lock_guard lock(mutex_);
        // The smallest idle buffer that holds n: blocks of one model are nearly all one size.
        auto best = idle_.end();
        for (auto it = idle_.begin(); it != idle_.end(); ++it) {
            if (it->capacity() >= n && (best == idle_.end() || it->capacity() < best->capacity())) best = it;
        }
        if (best != idle_.end()) {
            idle_bytes_ -= best->capacity();
            blob->bytes = std::move(*best);
            *best = std::move(idle_.back());
            idle_.pop_back();
        }
    }
    blob->bytes.resize(n);  // within the capacity of a reused buffer: no new page is touched
    std::weak_ptr<blob_pool> pool = weak_from_this();
    return std::shared_ptr<block_blob>(blob, [pool](block_blob * b) {
        if (auto p = pool.lock()) p->give_back(std::move(b->bytes));
        delete b;
    });
}

void blob_pool::reserve(size_t count, size_t n) {
    for (size_t i = 0; i < count; ++i) give_back(std::vector<uint8_t>(n));  // value-initialised: every page touched
}

void blob_pool::give_back(std::vector<uint8_t> && bytes) {
    std::lock_guard lock(mutex_);
    if (bytes.capacity() == 0 || idle_bytes_ + bytes.capacity() > max_idle_) return;  // freed with the blob
    idle_bytes_ += bytes.capacity();
    idle_.push_back(std::move(bytes));
}

size_t blob_pool::idle_bytes() const {
    std::lock_guard lock(mutex_);
    return idle_bytes_;
}

size_t blob_pool::idle_buffers() const {
    std::lock_guard lock(mutex_);
    return idle_.size();
}

}  // namespace rc::kv
