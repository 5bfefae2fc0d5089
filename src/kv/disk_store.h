#pragma once
// T2: blocks on local disk under a hard byte budget, surviving restarts (DESIGN.md §5 Durability).
// One file per block, `<key hex>.kvb` in the store's directory:
//   header (magic, version, identity digest, key, pos0, n_tokens, payload size, checksum) + payload
// written to a temp file, fsynced, renamed, directory fsynced. The checksum is SHA-256 over the
// header fields and the payload, so any flipped byte anywhere is caught. open() rebuilds the index
// from the headers; read() verifies the checksum; a bad block is deleted, counted, never served.
// Thread-safe: the I/O pool writes and reads; the engine thread only asks contains().
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "kv/block_blob.h"
#include "kv/block_key.h"
#include "util/result.h"

namespace rc::kv {

class disk_store {
  public:
    // Creates the directory if needed, removes leftover temp files, indexes valid blocks (oldest
    // first, by mtime), drops and counts those with a bad header or a foreign identity, and trims
    // to the budget. Errors: io when the directory cannot be created or read.
    static result<std::unique_ptr<disk_store>> open(const std::filesystem::path & dir, size_t budget_bytes, const digest256 & identity);

    // Stores a block (no-op when present), evicting least-recently-used blocks to fit. Errors: io
    // (disk full, permissions); a blob larger than the budget is refused with invalid_argument.
    status write(const block_key & key, const block_blob & blob);
    // Reads and verifies a block. Errors: not_found; io; invalid_argument when the file is corrupt
    // (it is deleted and counted).
    result<std::shared_ptr<block_blob>> read(const block_key & key);

    bool contains(const block_key & key) const;
    size_t bytes_used() const;
    size_t budget() const { return budget_; }
    size_t count() const;
    uint64_t corrupt_dropped() const { return corrupt_.load(); }
    const std::filesystem::path & dir() const { return dir_; }

    static constexpr size_t header_bytes = 128;

  private:
    disk_store(std::filesystem::path dir, size_t budget, const digest256 & identity) : dir_(std::move(dir)), budget_(budget), identity_(identity) {}
    std::filesystem::path path_of(const block_key & key) const;
    void drop_corrupt(const block_key & key);
    void evict_to_fit(size_t incoming);  // caller holds mutex_

    struct file_entry {
        block_key key;
        size_t bytes = 0;
    };
    std::filesystem::path dir_;
    size_t budget_;
    digest256 identity_;
    mutable std::mutex mutex_;
    std::list<file_entry> lru_;  // front: most recent
    std::unordered_map<block_key, std::list<file_entry>::iterator, block_key_hash> index_;
    size_t used_ = 0;
    std::atomic<uint64_t> corrupt_{0};
};

}  // namespace rc::kv
