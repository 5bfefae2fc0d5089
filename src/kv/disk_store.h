#pragma once
// T2: blocks on local disk under a hard byte budget, surviving restarts (ARCHITECTURE.md §5 Durability).
// One file per block, `<key hex>.kvb` in the store's directory:
//   header (magic, version, identity digest, key, pos0, n_tokens, payload size, checksum) + payload
// written to a temp file, fsynced, renamed, directory fsynced. The checksum is XXH3-64 over the header
// fields and the payload (blocks are named by their SHA-256 chain key; the checksum only has to catch
// corruption, and XXH3 runs at memory speed), so any flipped byte anywhere is caught. open() rebuilds
// the index from the headers; read() verifies the checksum; a bad block is deleted, counted as
// corrupt, never served. A block file that vanished (someone else removed it) is dropped from the
// index and counted as missing, not corrupt. A file that cannot be deleted (a read-only or immutable
// directory) stays indexed and counted, so the budget is never exceeded: writes that would need its
// space are refused instead.
// Thread-safe: the I/O pool writes and reads; the engine thread only asks contains(). No file system
// call runs under the lock contains() takes (fsync, rename and unlink happen outside it).
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kv/blob_pool.h"
#include "kv/block_blob.h"
#include "kv/block_key.h"
#include "util/result.h"

namespace rc::kv {

class disk_store {
  public:
    // Removes a file; returns the error (none: removed or already gone). Replaceable for tests that
    // need a directory whose files cannot be deleted.
    using remove_fn = std::function<std::error_code(const std::filesystem::path &)>;

    // Creates the directory if needed, removes leftover temp files, indexes valid blocks (most
    // recently written first, by mtime), drops and counts those with a bad header or a foreign
    // identity, drops blocks of an older format, and trims to the budget. Errors: io when the
    // directory cannot be created or read.
    static result<std::unique_ptr<disk_store>> open(const std::filesystem::path & dir, size_t budget_bytes, const digest256 & identity,
                                                    remove_fn remove = {});

    // Stores a block (no-op when present), evicting least-recently-used blocks to fit. Errors: io
    // (disk full, permissions, or no space can be freed because old blocks cannot be deleted); a
    // blob larger than the budget is refused with invalid_argument.
    status write(const block_key & key, const block_blob & blob);
    // Reads and verifies a block, into a buffer from `pool` when given. Errors: not_found (not
    // indexed, or its file vanished); io; invalid_argument when the file is corrupt (it is deleted
    // and counted).
    result<std::shared_ptr<block_blob>> read(const block_key & key, blob_pool * pool = nullptr);
    // Hints that these blocks will be read soon (the kernel starts reading them).
    void will_read(const std::vector<block_key> & keys) const;

    // Told of every block that enters (true) or leaves (false) the index, under the store's lock, in
    // the order of the changes (KV events). Set before the store is shared.
    using change_fn = std::function<void(bool entered, const block_key &)>;
    void on_change(change_fn f) { on_change_ = std::move(f); }
    void each_key(const std::function<void(const block_key &)> & f) const;  // under the lock: f must not call back

    bool contains(const block_key & key) const;
    size_t bytes_used() const;
    size_t budget() const { return budget_; }
    size_t count() const;
    size_t largest_payload() const;  // of the blocks indexed at open (0: none)
    uint64_t corrupt_dropped() const { return corrupt_.load(); }
    uint64_t missing_dropped() const { return missing_.load(); }
    const std::filesystem::path & dir() const { return dir_; }

    // Small records kept in `records.log` beside the blocks (appended, each checksummed; a torn or
    // corrupt tail is ignored on read). Not durable before the next fsync of the file: they are hints.
    status append_record(const std::vector<uint8_t> & record);
    std::vector<std::vector<uint8_t>> read_records() const;
    status rewrite_records(const std::vector<std::vector<uint8_t>> & records);

    static constexpr size_t header_bytes = 128;

  private:
    disk_store(std::filesystem::path dir, size_t budget, const digest256 & identity, remove_fn remove)
        : dir_(std::move(dir)), budget_(budget), identity_(identity), remove_(std::move(remove)) {}
    std::filesystem::path path_of(const block_key & key) const;
    std::vector<block_key> pick_victims(size_t incoming);  // removes them from the index (caller holds mutex_)
    bool delete_victims(const std::vector<block_key> & victims);  // false: some could not be deleted
    void drop(const block_key & key, std::atomic<uint64_t> & counter);

    struct file_entry {
        block_key key;
        size_t bytes = 0;
    };
    std::filesystem::path dir_;
    size_t budget_;
    digest256 identity_;
    remove_fn remove_;
    change_fn on_change_;
    void changed(bool entered, const block_key & k) const {
        if (on_change_) on_change_(entered, k);
    }
    mutable std::mutex mutex_;
    std::list<file_entry> lru_;  // front: most recent
    std::unordered_map<block_key, std::list<file_entry>::iterator, block_key_hash> index_;
    std::unordered_map<block_key, size_t, block_key_hash> deleting_;  // evicted, file not yet removed: its bytes still count
    std::unordered_set<block_key, block_key_hash> writing_;           // renamed into place, not yet indexed
    size_t largest_payload_ = 0;
    size_t used_ = 0;            // bytes on disk that count against the budget: indexed, being written, being deleted, stuck
    size_t deleting_bytes_ = 0;  // of which are being deleted right now
    size_t stuck_bytes_ = 0;     // of which could not be deleted and are never served
    std::atomic<uint64_t> corrupt_{0};
    std::atomic<uint64_t> missing_{0};
    std::mutex records_mutex_;
};

}  // namespace rc::kv
