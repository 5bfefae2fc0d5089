#pragma once
// The KV tiers below the context (T1 host RAM, T2 disk) and the moves between them (ARCHITECTURE.md §5).
// Block moves into and out of the llama_context happen in the engine (engine/kv_bridge); what to move
// is the planner's decision (kv_planner.h); this class keeps the blocks and moves them between T1 and
// T2 on its I/O pool, so the engine thread never waits on disk (write-through included: it only
// delays the caller's completion callback, never the caller). Thread-safe.
#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kv/blob_pool.h"
#include "kv/block_key.h"
#include "kv/disk_store.h"
#include "kv/kv_events.h"
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
    bool write_through = false;          // true: a finished request is reported only once its blocks are on disk
    int cached_sequences = 8;            // idle conversations kept in the context (T0)
    int checkpoint_blocks = 8;           // models kept as whole states: one every this many blocks of a prompt (0: none)
    int io_threads = 1;
    // The server's KV event log (kv_events.h): the tiers' blocks are a source in it, named `model`.
    std::shared_ptr<kv_event_log> events;
    std::string model;
};

// Where a block is below the context. The planner asks through this interface (tests give it a fake).
class block_index {
  public:
    virtual ~block_index() = default;
    virtual std::optional<tier_name> where(const block_key & key) const = 0;
};

// Disk writes that one caller waits for (a write-through request): `done` runs on an I/O thread once
// every write added before seal() has finished, successfully or not.
class write_group {
  public:
    explicit write_group(std::function<void()> done) : done_(std::move(done)) {}
    void add() { pending_.fetch_add(1); }
    void finish_one() { if (pending_.fetch_sub(1) == 1) fire(); }
    void seal() { finish_one(); }  // the caller's own reference (pending_ starts at 1)

  private:
    void fire() {
        if (done_) done_();
    }
    std::atomic<int> pending_{1};
    std::function<void()> done_;
};

class kv_manager : public block_index {
  public:
    // Errors: invalid_argument (block size), io (disk directory unusable). Counters go to `stats`,
    // which must outlive the manager.
    static result<std::unique_ptr<kv_manager>> open(const kv_options & opts, const kv_identity & id, kv_stats & stats);
    ~kv_manager() override;

    const kv_options & options() const { return opts_; }
    int block_size() const { return opts_.block_size; }
    bool host_enabled() const { return host_ != nullptr; }
    bool disk_enabled() const { return disk_ != nullptr; }

    // Host first, then disk; nullopt when in neither. Never waits on disk I/O.
    std::optional<tier_name> where(const block_key & key) const override;
    blob_ptr host_get(const block_key & key);

    // A block leaving the context: into T1 (evicting T1's least recently used blocks, which are
    // already on disk or queued for it) and to disk in the background. With `group`, the write
    // counts towards it.
    void store(const block_key & key, blob_ptr blob, const std::shared_ptr<write_group> & group = nullptr);
    // `group` also waits for every disk write queued before now and not yet finished (the blocks a
    // sequence stored while it ran, before the caller had a group).
    void join_pending_writes(const std::shared_ptr<write_group> & group);

    // Reads a consecutive run of a prompt's blocks on the I/O pool (host copies first, then disk)
    // and hands each block to `on_block` (on an I/O thread, in order, index into `keys`) as soon as
    // it is verified, so the caller restores one while the next is read. Blocks read from disk for
    // `on_block` are not kept in T1 (they are going into the context); at most a few are out at a
    // time: the reading goes on as the caller drops the blocks it has restored, and reuses their
    // buffers. Without `on_block` (a prefetch) they are put in T1. Stops at the first block that is
    // missing or corrupt (dropped and counted, never served); `on_end` then gets the number delivered
    // (on an I/O thread). `on_block` returns false when the caller no longer wants the blocks (the
    // reading ends there). A caller that holds its blocks holds up the reading, not an I/O thread.
    void promote_from_disk(std::vector<block_key> keys, std::function<bool(size_t, blob_ptr)> on_block,
                           std::function<void(size_t)> on_end);

    // The blocks the context holds now, as event keys (every sequence's full blocks; a key several
    // sequences share may repeat): those that came and went since the last call go out as
    // context-tier events, and a snapshot lists them. Without an event log it does nothing.
    void context_holds(const std::vector<uint64_t> & keys);

    // Small records persisted beside the disk blocks (the planner's prompt-end aliases): appended in
    // the background; read_records() returns what the directory held at open. No-ops without disk.
    void append_record(std::vector<uint8_t> record);
    std::vector<std::vector<uint8_t>> read_records() const;
    void rewrite_records(const std::vector<std::vector<uint8_t>> & records);  // synchronous (at open)

    void drain_io() { io_->drain(); }  // waits for queued disk work (tests, shutdown)

    size_t host_bytes() const { return host_ ? host_->bytes_used() : 0; }
    size_t disk_bytes() const { return disk_ ? disk_->bytes_used() : 0; }
    size_t host_blocks() const { return host_ ? host_->count() : 0; }
    size_t disk_blocks() const { return disk_ ? disk_->count() : 0; }
    uint64_t corrupt_blocks() const { return disk_ ? disk_->corrupt_dropped() : 0; }
    uint64_t missing_blocks() const { return disk_ ? disk_->missing_dropped() : 0; }

  private:
    struct disk_promotion;
    void publish_events();  // makes the tiers a source of opts_.events
    // Lets a block released after the manager is gone ask for nothing (see released()).
    struct io_link {
        std::mutex mutex;
        kv_manager * manager = nullptr;
    };
    kv_manager(kv_stats & stats) : stats_(stats), link_(std::make_shared<io_link>()) { link_->manager = this; }
    void read_promotion(const std::shared_ptr<disk_promotion> & p);
    static void released(const std::shared_ptr<disk_promotion> & p, const std::weak_ptr<io_link> & link);
    void write_to_disk(const block_key & key, const blob_ptr & blob);
    void finish_write(const block_key & key);

    kv_options opts_;
    kv_identity id_;
    kv_stats & stats_;
    std::unique_ptr<host_store> host_;
    std::unique_ptr<disk_store> disk_;
    // A restore's blocks read and not yet restored (and dropped) by the caller, at most.
    static constexpr int k_blocks_in_flight = 4;
    // Disk reads on their way into the context reuse these buffers (blob_pool.h); at most this
    // much waits idle.
    static constexpr size_t k_read_buffer_bytes = 64u << 20;
    std::shared_ptr<blob_pool> read_buffers_;
    std::unique_ptr<io_pool> io_;
    // Disk writes queued and not finished, each with the groups waiting for it (one write per key).
    std::mutex writing_mutex_;
    std::unordered_map<block_key, std::vector<std::shared_ptr<write_group>>, block_key_hash> writing_;
    std::shared_ptr<io_link> link_;
    uint32_t event_source_ = 0;  // in opts_.events
    std::mutex context_mutex_;
    std::unordered_set<uint64_t> context_;  // announced as held by the context
};

}  // namespace rc::kv
