#pragma once
// A metric family: one name, HELP text, type and label names; one child (time series) per distinct
// tuple of label values. Thread-safe: children are found under a shared lock and created under an
// exclusive one, and never removed, so a reference from with() stays valid for the registry's life.
// Label values must come from a bounded set (route patterns, model names, reasons), never from raw
// client input, or the registry grows without bound.
#include <cassert>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "metrics/metric.h"

namespace rc::metrics {

class scrape_sink;

// What the registry needs from every family to expose it.
class family_base {
  public:
    family_base(std::string name, std::string help, metric_type type, std::vector<std::string> label_names)
        : name_(std::move(name)), help_(std::move(help)), type_(type), label_names_(std::move(label_names)) {}
    virtual ~family_base() = default;
    family_base(const family_base &) = delete;
    family_base & operator=(const family_base &) = delete;

    const std::string & name() const { return name_; }
    const std::string & help() const { return help_; }
    metric_type type() const { return type_; }
    const std::vector<std::string> & label_names() const { return label_names_; }

    // Appends HELP, TYPE and the samples; nothing at all when the family has no samples (a family
    // without series is not worth a scraper's attention). `scraped`: this scrape's collector output.
    virtual void write(std::string & out, const scrape_sink & scraped) const = 0;

  protected:
    void write_header(std::string & out) const;

  private:
    std::string name_;
    std::string help_;
    metric_type type_;
    std::vector<std::string> label_names_;
};

template <class T>
class family final : public family_base {
  public:
    static constexpr metric_type type_of() {
        if constexpr (std::is_same_v<T, counter>) return metric_type::counter;
        else if constexpr (std::is_same_v<T, gauge>) return metric_type::gauge;
        else return metric_type::histogram;
    }

    // Use registry::add_* (it validates names and bounds).
    family(std::string name, std::string help, std::vector<std::string> label_names, std::vector<double> bounds = {})
        : family_base(std::move(name), std::move(help), type_of(), std::move(label_names)), bounds_(std::move(bounds)) {
        // A family without labels has exactly one series; expose it (as 0) from the start.
        if (this->label_names().empty()) with({});
    }

    // The child for `values` (one per label name, in order), created on first use. A wrong count is
    // a caller bug: it asserts; release builds pad with "" or drop extras so the output stays valid.
    T & with(const std::vector<std::string> & values) {
        assert(values.size() == label_names().size() && "label value count must match the family's label names");
        const std::vector<std::string> * key = &values;
        std::vector<std::string> fixed;
        if (values.size() != label_names().size()) {
            fixed = values;
            fixed.resize(label_names().size());
            key = &fixed;
        }
        {
            std::shared_lock lock(mutex_);
            if (auto it = children_.find(*key); it != children_.end()) return *it->second;
        }
        std::unique_lock lock(mutex_);
        auto [it, inserted] = children_.try_emplace(*key);
        if (inserted) {
            if constexpr (std::is_same_v<T, histogram>) it->second = std::make_unique<T>(bounds_);
            else it->second = std::make_unique<T>();
        }
        return *it->second;
    }

    // Histogram upper bounds (empty for counters and gauges).
    const std::vector<double> & bounds() const { return bounds_; }

    void write(std::string & out, const scrape_sink & scraped) const override;

  private:
    std::vector<double> bounds_;
    mutable std::shared_mutex mutex_;
    std::map<std::vector<std::string>, std::unique_ptr<T>> children_;
};

using counter_family = family<counter>;
using gauge_family = family<gauge>;
using histogram_family = family<histogram>;

}  // namespace rc::metrics
