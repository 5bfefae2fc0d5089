#pragma once
// Counters of the KV tiers for /metrics and /api/ps (ARCHITECTURE.md §5 Metrics): prompt tokens by source,
// block moves and bytes per tier pair, evictions, preemptions, corrupt and missing blocks, promotion
// latency. The planner owns a `kv_stats` (lock-free counters written by the engine thread and the I/O
// pool); readers take a `kv_stats_snapshot`, plain values with a name for every field. Counters only grow.
#include <array>
#include <atomic>
#include <cstdint>
#include <utility>
#include <vector>

namespace rc::kv {

enum class tier_name { context, host, disk };
enum class source { computed, context, host, disk };

// Fixed-bucket histogram, lock-free; `bounds` are upper bounds, the last bucket is +Inf.
template <size_t N>
struct fixed_histogram {
    std::array<double, N> bounds;
    std::array<std::atomic<uint64_t>, N + 1> buckets{};
    std::atomic<uint64_t> count{0};
    std::atomic<double> sum{0};

    explicit fixed_histogram(const std::array<double, N> & b) : bounds(b) {}
    void observe(double v) {
        size_t i = 0;
        while (i < N && v > bounds[i]) ++i;
        ++buckets[i];
        ++count;
        double s = sum.load(std::memory_order_relaxed);
        while (!sum.compare_exchange_weak(s, s + v, std::memory_order_relaxed)) {
        }
    }
};

struct histogram_snapshot {
    std::vector<double> bounds;
    std::vector<uint64_t> buckets;  // per bucket (not cumulative), bounds.size() + 1 of them
    uint64_t count = 0;
    double sum = 0;

    template <size_t N>
    static histogram_snapshot of(const fixed_histogram<N> & h) {
        histogram_snapshot s;
        s.bounds.assign(h.bounds.begin(), h.bounds.end());
        for (const auto & b : h.buckets) s.buckets.push_back(b.load());
        s.count = h.count.load();
        s.sum = h.sum.load();
        return s;
    }
};

inline constexpr std::array<double, 12> k_latency_bounds = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5};
using latency_histogram = fixed_histogram<k_latency_bounds.size()>;

struct kv_stats_snapshot {
    struct by_source {
        uint64_t computed = 0, context = 0, host = 0, disk = 0;
    };
    struct move_count {
        uint64_t blocks = 0, bytes = 0;
    };
    struct by_move {  // promotions go up (disk → host → context; disk → context for a restore), demotions down
        move_count context_to_host, host_to_disk, disk_to_host, host_to_context, disk_to_context;
    };
    struct by_tier {
        uint64_t context = 0, host = 0, disk = 0;
    };
    struct tier_usage {
        bool enabled = false;
        uint64_t bytes = 0, budget = 0, blocks = 0;
    };

    by_source prompt_tokens;        // where each prompt token's KV came from
    by_move moves;
    by_tier evictions;              // context: eviction operations on idle conversations; host, disk: blocks
    uint64_t preemptions = 0;       // running sequences swapped out to make room, resumed later
    uint64_t corrupt_blocks = 0;    // disk blocks dropped for a bad header or checksum
    uint64_t missing_blocks = 0;    // indexed disk blocks whose file vanished (removed by someone else)
    histogram_snapshot promotion_host;  // per block: restoring it from host RAM into the context
    histogram_snapshot promotion_disk;  // per block: reading and verifying it on the I/O pool
    histogram_snapshot restore_host;    // per request: its prefix from host RAM into the context
    histogram_snapshot restore_disk;    // per request: its prefix from disk into the context (reads and restores overlap)
    tier_usage host, disk;
    int block_size = 0;
};

// Names for exposition, so readers never index by position.
inline constexpr std::pair<const char *, uint64_t kv_stats_snapshot::by_source::*> k_source_fields[] = {
    {"computed", &kv_stats_snapshot::by_source::computed},
    {"context", &kv_stats_snapshot::by_source::context},
    {"host", &kv_stats_snapshot::by_source::host},
    {"disk", &kv_stats_snapshot::by_source::disk},
};
struct move_field {
    const char * from;
    const char * to;
    kv_stats_snapshot::move_count kv_stats_snapshot::by_move::*field;
};
inline constexpr move_field k_move_fields[] = {
    {"context", "host", &kv_stats_snapshot::by_move::context_to_host},
    {"host", "disk", &kv_stats_snapshot::by_move::host_to_disk},
    {"disk", "host", &kv_stats_snapshot::by_move::disk_to_host},
    {"host", "context", &kv_stats_snapshot::by_move::host_to_context},
    {"disk", "context", &kv_stats_snapshot::by_move::disk_to_context},
};
inline constexpr std::pair<const char *, uint64_t kv_stats_snapshot::by_tier::*> k_tier_fields[] = {
    {"context", &kv_stats_snapshot::by_tier::context},
    {"host", &kv_stats_snapshot::by_tier::host},
    {"disk", &kv_stats_snapshot::by_tier::disk},
};

// The live counters. Writers: the engine thread and the I/O pool.
struct kv_stats {
    struct counter {
        std::atomic<uint64_t> v{0};
        void add(uint64_t n) { v.fetch_add(n, std::memory_order_relaxed); }
        uint64_t get() const { return v.load(std::memory_order_relaxed); }
    };
    struct move_counter {
        counter blocks, bytes;
        void add(uint64_t b) {
            blocks.add(1);
            bytes.add(b);
        }
    };

    counter tokens_computed, tokens_context, tokens_host, tokens_disk;
    move_counter context_to_host, host_to_disk, disk_to_host, host_to_context, disk_to_context;
    counter evicted_context, evicted_host, evicted_disk;
    counter preemptions;
    latency_histogram promotion_host{k_latency_bounds}, promotion_disk{k_latency_bounds};
    latency_histogram restore_host{k_latency_bounds}, restore_disk{k_latency_bounds};

    void add_tokens(source s, uint64_t n) {
        switch (s) {
            case source::computed: tokens_computed.add(n); break;
            case source::context: tokens_context.add(n); break;
            case source::host: tokens_host.add(n); break;
            case source::disk: tokens_disk.add(n); break;
        }
    }
};

}  // namespace rc::kv
