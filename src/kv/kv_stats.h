#pragma once
// Counters the tiers keep for /metrics (DESIGN.md §5 Metrics): prompt tokens by source, block moves
// and bytes per tier pair, evictions, corrupt blocks, promotion latency. Counters only grow.
#include <array>
#include <atomic>
#include <cstdint>

namespace rc::kv {

enum class source { computed = 0, context = 1, host = 2, disk = 3 };
inline constexpr const char * source_names[] = {"computed", "context", "host", "disk"};

// Tier pairs a block moves between. Promotions go up (disk→host→context), demotions down.
enum class move { host_to_context = 0, disk_to_host = 1, context_to_host = 2, host_to_disk = 3 };
inline constexpr const char * move_from[] = {"host", "disk", "context", "host"};
inline constexpr const char * move_to[] = {"context", "host", "host", "disk"};
inline constexpr bool move_is_promotion[] = {true, true, false, false};

enum class tier_name { context = 0, host = 1, disk = 2 };
inline constexpr const char * tier_names[] = {"context", "host", "disk"};

// Fixed-bucket latency histogram (seconds), lock-free.
struct latency_histogram {
    static constexpr std::array<double, 12> bounds = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5};
    std::array<std::atomic<uint64_t>, bounds.size() + 1> buckets{};  // last: +Inf
    std::atomic<uint64_t> count{0};
    std::atomic<uint64_t> sum_us{0};

    void observe(double seconds) {
        size_t i = 0;
        while (i < bounds.size() && seconds > bounds[i]) ++i;
        ++buckets[i];
        ++count;
        sum_us += static_cast<uint64_t>(seconds * 1e6);
    }
};

struct kv_stats {
    std::array<std::atomic<uint64_t>, 4> prompt_tokens{};  // by source
    std::array<std::atomic<uint64_t>, 4> moves{};          // blocks, by move
    std::array<std::atomic<uint64_t>, 4> move_bytes{};
    std::array<std::atomic<uint64_t>, 3> evictions{};      // blocks leaving a tier, by tier
    std::array<latency_histogram, 2> promotion_latency;    // by source tier: host, disk

    void add_tokens(source s, uint64_t n) { prompt_tokens[static_cast<int>(s)] += n; }
    void add_move(move m, uint64_t bytes) {
        ++moves[static_cast<int>(m)];
        move_bytes[static_cast<int>(m)] += bytes;
    }
};

}  // namespace rc::kv
