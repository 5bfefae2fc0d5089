#pragma once
// A Prometheus registry: families registered once at start-up, updated from any thread, exposed in
// the text format 0.0.4 by expose(). No dependencies beyond the standard library (and rc_util).
//
//   metrics::registry reg;
//   auto & requests = *reg.add_counter("app_requests_total", "Requests served.", {"route", "status"}).value();
//   requests.with({"/v1/models", "200"}).inc();
//
// Values owned elsewhere (engine statistics, memory use) are read at scrape time instead: declare a
// collected family, register a collector, and the collector adds this scrape's samples.
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "metrics/family.h"
#include "util/result.h"

namespace rc::metrics {

// A family whose samples a collector produces afresh at every scrape (series of a model that was
// unloaded simply stop appearing). Counter, gauge, or histogram (buckets kept by their owner).
class collected_family final : public family_base {
  public:
    using family_base::family_base;
    void write(std::string & out, const scrape_sink & scraped) const override;
};

// Where collectors put this scrape's samples. Used only during one expose() call, on its thread.
class scrape_sink {
  public:
    // One sample of `f` (label values in the order of its label names). A second sample with the
    // same label values replaces the first (an exposition must not repeat a series).
    void add(const collected_family & f, std::vector<std::string> label_values, double value);

    // One series of a histogram family: `bounds` (finite, increasing), `cumulative` counts per
    // bound plus +Inf (size bounds + 1, non-decreasing), and the sum of observations.
    struct histogram_sample {
        std::vector<double> bounds;
        std::vector<uint64_t> cumulative;
        double sum = 0;
    };
    void add_histogram(const collected_family & f, std::vector<std::string> label_values, histogram_sample h);

    // The samples of `f`, sorted by label values; null when there are none.
    const std::map<std::vector<std::string>, double> * samples(const collected_family & f) const;
    const std::map<std::vector<std::string>, histogram_sample> * histograms(const collected_family & f) const;

  private:
    std::map<const collected_family *, std::map<std::vector<std::string>, double>> samples_;
    std::map<const collected_family *, std::map<std::vector<std::string>, histogram_sample>> histograms_;
};

using collector = std::function<void(scrape_sink &)>;

// Default histogram bounds for request latencies in seconds (Prometheus' defaults, extended to the
// minutes a long generation may take).
std::vector<double> default_latency_buckets();

class registry {
  public:
    registry() = default;
    registry(const registry &) = delete;
    registry & operator=(const registry &) = delete;

    // Each fails with invalid_argument on an invalid or already registered name, invalid or
    // duplicate label names, a counter name without the `_total` suffix (Prometheus' convention,
    // which promtool checks), or histogram bounds that are not finite and strictly increasing (a
    // trailing +Inf is allowed and dropped: the +Inf bucket is always there). Thread-safe. The
    // returned families live as long as the registry.
    result<counter_family *> add_counter(std::string name, std::string help, std::vector<std::string> label_names = {});
    result<gauge_family *> add_gauge(std::string name, std::string help, std::vector<std::string> label_names = {});
    result<histogram_family *> add_histogram(std::string name, std::string help, std::vector<std::string> label_names,
                                             std::vector<double> bounds);
    // Any type; a histogram's collector reports whole series with scrape_sink::add_histogram.
    result<collected_family *> add_collected(std::string name, std::string help, metric_type type,
                                             std::vector<std::string> label_names = {});

    // Runs at every expose(), on the scraping thread, before any family is written. Must be
    // thread-safe against itself (two scrapes may run at once). An exception from it is logged and
    // its samples of that scrape may be partial.
    void add_collector(collector fn);

    // The text exposition: families in registration order, series sorted by label values.
    std::string expose() const;

  private:
    status check_new(const std::string & name, metric_type type, const std::vector<std::string> & label_names) const;

    mutable std::mutex mutex_;
    std::vector<std::unique_ptr<family_base>> families_;
    std::vector<collector> collectors_;
};

}  // namespace rc::metrics
