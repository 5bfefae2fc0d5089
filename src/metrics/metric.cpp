#include "metrics/metric.h"

#include <algorithm>

namespace rc::metrics {

const char * metric_type_name(metric_type t) {
    switch (t) {
        case metric_type::counter: return "counter";
        case metric_type::gauge: return "gauge";
        case metric_type::histogram: return "histogram";
    }
    return "untyped";
}

histogram::histogram(const std::vector<double> & bounds)
    : bounds_(bounds), counts_(std::make_unique<std::atomic<uint64_t>[]>(bounds.size() + 1)) {}

void histogram::observe(double v) {
    if (std::isnan(v)) return;
    // First bound >= v: `le` buckets include their upper bound.
    size_t i = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
    counts_[i].fetch_add(1, std::memory_order_relaxed);
    sum_.fetch_add(v, std::memory_order_relaxed);
}

histogram::snapshot histogram::collect() const {
    snapshot s;
    s.cumulative.reserve(bounds_.size() + 1);
    uint64_t total = 0;
    for (size_t i = 0; i <= bounds_.size(); ++i) {
        total += counts_[i].load(std::memory_order_relaxed);
        s.cumulative.push_back(total);
    }
    s.count = total;
    s.sum = sum_.load(std::memory_order_relaxed);
    return s;
}

}  // namespace rc::metrics
