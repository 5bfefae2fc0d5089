#pragma once
// The children of a metric family: one time series each. Updates are lock-free atomics, so a hot
// path may cache a child reference (children live as long as their registry) and call
// inc()/set()/observe() from any thread without locking.
#include <atomic>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

namespace rc::metrics {

enum class metric_type { counter, gauge, histogram };
const char * metric_type_name(metric_type t);

// Only goes up; Prometheus treats a drop as a process restart, so a drop would corrupt rates.
class counter {
  public:
    // Ignores amounts that are not finite and positive (a counter never goes backwards).
    void inc(double amount = 1.0) {
        if (!(amount > 0) || !std::isfinite(amount)) return;
        value_.fetch_add(amount, std::memory_order_relaxed);
    }
    double value() const { return value_.load(std::memory_order_relaxed); }

  private:
    std::atomic<double> value_{0.0};
};

class gauge {
  public:
    void set(double v) { value_.store(v, std::memory_order_relaxed); }
    void inc(double amount = 1.0) { value_.fetch_add(amount, std::memory_order_relaxed); }
    void dec(double amount = 1.0) { value_.fetch_sub(amount, std::memory_order_relaxed); }
    double value() const { return value_.load(std::memory_order_relaxed); }

  private:
    std::atomic<double> value_{0.0};
};

// Observations counted per bucket (upper bounds inclusive, as Prometheus' `le`).
class histogram {
  public:
    // `bounds`: strictly increasing finite upper bounds; owned by the family, outlives the child.
    explicit histogram(const std::vector<double> & bounds);

    // NaN is ignored; +Inf and values above every bound land in the +Inf bucket.
    void observe(double v);

    struct snapshot {
        std::vector<uint64_t> cumulative;  // one per bound, then +Inf (== count)
        double sum = 0;
        uint64_t count = 0;
    };
    // Buckets are read one by one while others may observe; `count` is derived from the buckets so
    // the +Inf bucket always equals `_count` in one scrape.
    snapshot collect() const;

  private:
    const std::vector<double> & bounds_;
    std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // per bound, then one above every bound
    std::atomic<double> sum_{0.0};
};

}  // namespace rc::metrics
