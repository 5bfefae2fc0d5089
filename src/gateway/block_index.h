#pragma once
// Which host holds which KV block of a model, and in which tiers: the gateway's index (issue 33),
// fed by the hosts' KV events and walked for every routed request instead of asking the hosts.
//
// A block is known here by the first 8 bytes of its SHA-256 chain key (kv/block_key.h). Every host
// computes the same key for the same prefix, so the gateway computes a prompt's chain itself and
// walks it here. At 64 hosts × 100k blocks, two of the fleet's blocks share 64 bits with a
// probability near 10⁻⁶; a collision costs a worse route, never a wrong answer (a host restores
// only what its own full keys find).
//
// Memory: one 8-byte slot per block per host (open addressing; the slot's low 3 bits hold the tiers
// the block is in), about 11 bytes a block with the table's free room. A host's table of one model
// holds at most `max_blocks` blocks: beyond that the host is marked overflowed and the router asks
// it (POST /v1/kv/lookup) instead of trusting an index that is missing blocks. Thread-safe: walks
// share a lock, updates take it alone.
//
// A walk costs about one memory latency per chain block, whatever the number of hosts: it goes
// breadth-first (a chain block at a time, over the hosts still holding the prompt) and prefetches
// that round's slot of every host before reading any, so 64 hosts' cache misses overlap.
#include <cstdint>
#include <map>
#include <memory>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace rc::gateway {

enum tier_bit : uint8_t { tier_context = 1, tier_host = 2, tier_disk = 4 };
// "context" | "host" | "disk" → its bit; 0 otherwise.
uint8_t tier_bit_of(std::string_view name);

using short_key = uint64_t;
// The index's key of a block: the first 8 bytes of its 32-byte chain key (as kv::block_key::d holds it).
short_key short_key_of(const uint8_t * digest);
// The same from the key's hex text (its first 16 hex digits); false when they are not hex.
bool parse_short_key(std::string_view hex, short_key & out);

// One host's blocks of one model.
class host_blocks {
  public:
    // Adds `tiers` to the block's tiers. False, changing nothing, when the block is new and the table
    // already holds `max_blocks`.
    bool add(short_key k, uint8_t tiers, size_t max_blocks);
    // Takes `tiers` from the block's tiers; a block left in none is forgotten.
    void remove(short_key k, uint8_t tiers);
    uint8_t tiers(short_key k) const;  // 0: not held
    void prefetch(short_key k) const;  // brings the block's home slot toward the cache (a walk's next read)
    size_t size() const { return live_; }
    size_t bytes() const { return slots_.capacity() * sizeof(uint64_t); }

  private:
    size_t slot_of(uint64_t bits) const;  // the slot holding `bits`, else the first free one met
    void rehash(size_t capacity);
    std::vector<uint64_t> slots_;  // 0: never used; key bits with tiers 0: a forgotten block
    size_t live_ = 0, used_ = 0;  // blocks held; slots not empty (held + forgotten)
};

// What a host holds of a prompt: the tokens of its consecutive blocks from the prompt's start, each
// counted in the best tier holding it (context, then host RAM, then disk), as a lookup answers.
struct held_prefix {
    int context = 0, host = 0, disk = 0;
    int tokens() const { return context + host + disk; }
};

// One host's part of a walk.
struct host_walk {
    held_prefix held;
    bool overflowed = false;  // its table refused blocks: the index cannot answer for it
};

class block_index {
  public:
    explicit block_index(size_t max_blocks = size_t{1} << 21) : max_blocks_(max_blocks) {}

    void add(const std::string & host, const std::string & model, uint8_t tiers, std::span<const short_key> keys);
    void remove(const std::string & host, const std::string & model, uint8_t tiers, std::span<const short_key> keys);
    // The host's blocks are no longer known (its stream was lost, it restarted, it resyncs from a
    // snapshot): nothing is credited to it until it says again what it holds.
    void forget(const std::string & host);
    void forget(const std::string & host, const std::string & model);  // that model unloaded there

    // The numbers walk() knows `hosts` by (a host keeps its number for the index's lifetime, so a
    // caller resolves its hosts' names once, not per walk).
    using host_number = uint32_t;
    std::vector<host_number> numbers(std::span<const std::string_view> hosts);
    // What each of `hosts` holds of the prompt (`out`, parallel to `hosts`). `chain`: the prompt's
    // full-block keys, in order; each block is `block_size` tokens.
    void walk(const std::string & model, std::span<const short_key> chain, int block_size, std::span<const host_number> hosts,
              std::vector<host_walk> & out) const;

    size_t blocks() const;  // held, summed over hosts and models
    size_t blocks(const std::string & host) const;  // held by one host, over its models
    size_t bytes() const;   // the tables' memory

  private:
    struct host_entry {
        host_blocks blocks;
        bool overflowed = false;
    };
    host_number number_of(std::string_view host);  // under the unique lock: the host's number, given the first time
    size_t max_blocks_;
    mutable std::shared_mutex mu_;
    std::map<std::string, host_number, std::less<>> numbers_;  // never forgotten (a fleet's hosts, bounded by its size)
    // model → its tables by host number (null: none)
    std::unordered_map<std::string, std::vector<std::unique_ptr<host_entry>>> models_;
};

}  // namespace rc::gateway
