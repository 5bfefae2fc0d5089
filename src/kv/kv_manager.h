#pragma once
// The KV tiers below the context (T1 host RAM, T2 disk) and their bookkeeping, as the engine thread
// drives them (DESIGN.md §5). Block moves into and out of the llama_context happen in the engine
// (engine/kv_bridge); this class decides where blocks live and moves them between T1 and T2 on its
// I/O pool. Thread-safe.
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "kv/block_key.h"
#include "kv/disk_store.h"
#include "kv/host_store.h"
#include "kv/io_pool.h"
#include "kv/kv_stats.h"
#include "util/result.h"

namespace rc::kv {

struct kv_options {
    int block_size = 64;                 // tokens per block
    size_t host_budget = 0;              // bytes; 0 turns the host tier off
    std::filesystem::path disk_dir;      // empty turns the disk tier off
    size_t disk_budget = 0;              // bytes
    bool write_through = false;          // false: blocks reach disk asynchronously (write-back)
    int cached_sequences = 8;            // idle conversations kept in the context (T0)
    int io_threads = 1;
};

class kv_manager {
  public:
    // Errors: invalid_argument (block size), io (disk directory unusable).
    static result<std::unique_ptr<kv_manager>> open(const kv_options & opts, const kv_identity & id);
    ~kv_manager();

    const kv_options & options() const { return opts_; }
    int block_size() const { return opts_.block_size; }
    bool host_enabled() const { return host_ != nullptr; }
    bool disk_enabled() const { return disk_ != nullptr; }
    bool enabled() const { return host_enabled() || disk_enabled(); }

    block_key root(std::string_view cache_salt) const { return root_key(id_, cache_salt); }

    // Where a block is below the context: host first, then disk; nullopt when in neither.
    std::optional<tier_name> where(const block_key & key) const;
    blob_ptr host_get(const block_key & key);

    // A block leaving the context: into T1 (evicting T1's least recently used blocks, which are
    // already on disk or queued for it), and to disk write-back (or write-through).
    void store(const block_key & key, blob_ptr blob);

    // Reads blocks (a consecutive run of a prompt's blocks) from disk on the I/O pool, keeps them in
    // T1 when it is on, and hands them to `done` on an I/O thread: the longest verified prefix of
    // `keys`, in order. A corrupt block is dropped and counted, never served; the run stops there.
    void promote_from_disk(std::vector<block_key> keys, std::function<void(std::vector<blob_ptr>)> done);

    void drain_io() { io_->drain(); }  // waits for queued disk writes (tests, shutdown)

    kv_stats & stats() { return stats_; }
    size_t host_bytes() const { return host_ ? host_->bytes_used() : 0; }
    size_t disk_bytes() const { return disk_ ? disk_->bytes_used() : 0; }
    size_t host_blocks() const { return host_ ? host_->count() : 0; }
    size_t disk_blocks() const { return disk_ ? disk_->count() : 0; }
    uint64_t corrupt_blocks() const { return disk_ ? disk_->corrupt_dropped() : 0; }

  private:
    kv_manager() = default;
    void write_to_disk(const block_key & key, const blob_ptr & blob);

    kv_options opts_;
    kv_identity id_;
    std::unique_ptr<host_store> host_;
    std::unique_ptr<disk_store> disk_;
    std::unique_ptr<io_pool> io_;
    kv_stats stats_;
};

}  // namespace rc::kv
