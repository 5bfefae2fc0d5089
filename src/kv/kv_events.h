#pragma once
// KV events: what this server's tiers gained and lost, block by block, for the fleet gateway's
// block index (docs/GATEWAY.md). One log per server; each loaded model is a source in it.
//
// The tiers append as they change, under their own locks, so the log's order is the order of the
// changes. Appending is a short lock and a copy into a fixed ring: it never waits for a reader and
// never grows. When readers fall behind, the oldest events are overwritten; a reader that needed
// them is told (`gap`) and starts again from a snapshot: the sources' blocks as they are, taken
// after noting the log's last sequence number, then the events after it (each event sets a state,
// so replaying one the snapshot already shows changes nothing). Thread-safe.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "kv/block_key.h"
#include "kv/kv_stats.h"

namespace rc::kv {

// A block's key as events carry it: its first 8 bytes (the gateway's index keys blocks by them).
uint64_t event_key(const block_key & k);
// An event key as the event stream writes it: its 8 bytes in memory order (the key's first 8
// bytes), as 16 hex digits.
std::string event_key_hex(uint64_t key);

struct kv_event {
    enum class kind : uint8_t { added, removed, source_added, source_gone };
    uint64_t seq = 0;
    uint32_t source = 0;
    kind what = kind::added;
    tier_name tier = tier_name::host;
    uint64_t key = 0;
};

// Calls `emit` once per block a source holds, with its tier.
using kv_snapshot_fn = std::function<void(const std::function<void(tier_name, uint64_t)> & emit)>;

class kv_event_log {
  public:
    explicit kv_event_log(size_t capacity = size_t{1} << 16);

    // A source: one model's tiers. `snapshot` lists its blocks (called by readers resyncing, on
    // their thread). `block_size` and `identity` (the KV identity digest, hex) let a reader compute
    // the model's block keys itself. Appends source_added: a reader takes that source's snapshot
    // (the blocks it came with, a disk tier's from before a restart) and goes on with the events.
    uint32_t add_source(std::string model, int block_size, std::string identity, kv_snapshot_fn snapshot);
    // The source's blocks are gone (its model unloaded): appends source_gone and forgets it.
    void remove_source(uint32_t source);

    void append(uint32_t source, kv_event::kind what, tier_name tier, const block_key & key);
    void append(uint32_t source, kv_event::kind what, tier_name tier, uint64_t key);  // an event_key

    struct source_info {
        std::string model;
        int block_size = 0;
        std::string identity;
    };
    struct batch {
        std::vector<kv_event> events;  // seq > since, in order
        bool gap = false;              // events after `since` were overwritten: resync from a snapshot
        uint64_t last = 0;             // the last sequence number appended so far
    };
    // At most `max` events after `since`; waits up to `wait` for the first one when there is none.
    batch read(uint64_t since, size_t max, std::chrono::milliseconds wait = std::chrono::milliseconds(0)) const;

    struct snapshot_result {
        uint64_t seq = 0;  // the events after this one complete the snapshot
        std::map<uint32_t, source_info> sources;
        std::vector<kv_event> blocks;  // added, seq 0
    };
    // Every source's blocks, or only `source`'s (after its source_added).
    snapshot_result snapshot(std::optional<uint32_t> source = std::nullopt) const;
    std::map<uint32_t, source_info> sources() const;

    // Random per log (so per server run): a reader's sequence numbers mean nothing in another epoch.
    const std::string & epoch() const { return epoch_; }
    uint64_t last_seq() const;
    uint64_t gaps() const;  // reads answered with a gap (a reader fell behind by more than the ring)
    size_t capacity() const { return ring_.size(); }

  private:
    struct source_entry {
        source_info info;
        kv_snapshot_fn snapshot;
    };
    // Held shared while a snapshot calls the sources, alone while one is removed: a source's
    // snapshot function is never called after remove_source returns.
    mutable std::shared_mutex sources_mu_;
    mutable std::mutex mu_;  // the ring; never held while a source is called
    mutable std::condition_variable appended_;
    mutable int waiting_ = 0;
    std::vector<kv_event> ring_;  // seq s at ring_[s % capacity]
    uint64_t last_ = 0;
    mutable uint64_t gaps_ = 0;
    std::string epoch_;
    uint32_t next_source_ = 1;
    std::map<uint32_t, source_entry> sources_;
};

}  // namespace rc::kv
