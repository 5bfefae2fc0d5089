#pragma once
// The gateway's memory of which host it sent which prompt prefix: the conversation-affinity
// fallback when lookups do not answer in time, and the hint whether a lookup is worth waiting for
// (a prompt no host was ever sent a prefix of is unlikely to be cached anywhere).
//
// A prompt's canonical text (request_shape.h) is cut into fixed chunks; chunk i's key is a hash of
// chunks 0..i, so equal keys mean equal prefixes (up to 64-bit collisions, which cost a worse route,
// never a wrong answer). Each key remembers the last few hosts sent it. Bounded: least recently
// used keys are dropped beyond `capacity`. Thread-safe.
#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace rc::gateway {

inline constexpr size_t prefix_chunk_bytes = 256;

// The chain of prefix keys of `canonical` (one per whole chunk).
std::vector<uint64_t> prefix_chain(const std::string & canonical);

class prefix_index {
  public:
    prefix_index() : prefix_index(1u << 18) {}
    explicit prefix_index(size_t capacity);

    // `host` was sent a prompt with these prefixes.
    void record(const std::vector<uint64_t> & chain, const std::string & host);

    // For each host sent a prefix of this prompt: the share of the prompt (0..1) that prefix covers.
    std::map<std::string, double> affinity(const std::vector<uint64_t> & chain, size_t canonical_bytes) const;

    // How much distinct prompt text (chunks) the index remembers sending `host`: its share of what
    // the fleet's caches hold, as far as this gateway placed it.
    size_t held(const std::string & host) const;

    // The host lost what it held (it restarted): it is no longer remembered for any prefix.
    void forget(const std::string & host);

    size_t size() const;

  private:
    static constexpr size_t hosts_per_key = 4;
    struct entry {
        std::vector<std::string> hosts;  // most recent first, at most hosts_per_key
        std::list<uint64_t>::iterator lru;
    };
    size_t capacity_;
    mutable std::mutex mu_;
    std::unordered_map<uint64_t, entry> keys_;
    std::list<uint64_t> lru_;  // front: most recent
    std::unordered_map<std::string, size_t> held_;  // per host: keys listing it
};

}  // namespace rc::gateway
