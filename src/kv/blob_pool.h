#pragma once
// Payload buffers that are used again: a blob made here hands its buffer back to the pool when its
// last reference goes, and the next blob of about that size takes it. For blocks that only pass
// through host RAM on their way into the context (a disk block read for a restore): what such a read
// costs most is not the copy from the page cache but fresh memory, which the kernel faults in and
// zeroes a page at a time (3-6 ms for a 2 MiB block on a VM, against 0.5 ms to copy it into memory
// already mapped). At most `max_idle_bytes` wait idle; beyond that a buffer handed back is freed.
// Thread-safe: blobs are made on I/O threads and dropped on the engine thread; a blob may outlive
// its pool (its buffer is then simply freed).
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "kv/block_blob.h"

namespace rc::kv {

class blob_pool : public std::enable_shared_from_this<blob_pool> {
  public:
    static std::shared_ptr<blob_pool> create(size_t max_idle_bytes);

    // A blob whose `bytes` holds n bytes, of unspecified value: the caller overwrites them.
    std::shared_ptr<block_blob> make(size_t n);
    // Faults in `count` idle buffers of n bytes now (within the idle limit), so that the first blobs
    // made do not pay for fresh memory.
    void reserve(size_t count, size_t n);

    size_t idle_bytes() const;
    size_t idle_buffers() const;

  private:
    explicit blob_pool(size_t max_idle_bytes) : max_idle_(max_idle_bytes) {}
    void give_back(std::vector<uint8_t> && bytes);

    const size_t max_idle_;
    mutable std::mutex mutex_;
    std::vector<std::vector<uint8_t>> idle_;
    size_t idle_bytes_ = 0;  // their capacity
};

}  // namespace rc::kv
