#include "metrics/registry.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "metrics/text_format.h"
#include "util/log.h"

namespace rc::metrics {

void scrape_sink::add(const collected_family & f, std::vector<std::string> label_values, double value) {
    label_values.resize(f.label_names().size());  // same repair as family::with: keep the output valid
    samples_[&f][std::move(label_values)] = value;
}

void scrape_sink::add_histogram(const collected_family & f, std::vector<std::string> label_values, histogram_sample h) {
    label_values.resize(f.label_names().size());
    h.cumulative.resize(h.bounds.size() + 1, h.cumulative.empty() ? 0 : h.cumulative.back());
    histograms_[&f][std::move(label_values)] = std::move(h);
}

const std::map<std::vector<std::string>, scrape_sink::histogram_sample> * scrape_sink::histograms(const collected_family & f) const {
    auto it = histograms_.find(&f);
    return it == histograms_.end() ? nullptr : &it->second;
}

const std::map<std::vector<std::string>, double> * scrape_sink::samples(const collected_family & f) const {
    auto it = samples_.find(&f);
    return it == samples_.end() ? nullptr : &it->second;
}

std::vector<double> default_latency_buckets() {
    return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};
}

status registry::check_new(const std::string & name, metric_type type, const std::vector<std::string> & label_names) const {
    if (!is_valid_metric_name(name)) return make_error(errc::invalid_argument, "invalid metric name '" + name + "'");
    const bool ends_total = name.size() > 6 && name.compare(name.size() - 6, 6, "_total") == 0;
    if (type == metric_type::counter && !ends_total)
        return make_error(errc::invalid_argument, "counter '" + name + "' must be named *_total");
    std::set<std::string> seen;
    for (const auto & l : label_names) {
        if (!is_valid_label_name(l)) return make_error(errc::invalid_argument, "metric '" + name + "': invalid label name '" + l + "'");
        if (type == metric_type::histogram && l == "le")
            return make_error(errc::invalid_argument, "histogram '" + name + "': label 'le' is reserved for buckets");
        if (!seen.insert(l).second) return make_error(errc::invalid_argument, "metric '" + name + "': label '" + l + "' repeated");
    }
    for (const auto & f : families_) {
        if (f->name() == name) return make_error(errc::invalid_argument, "metric '" + name + "' is already registered");
    }
    return {};
}

result<counter_family *> registry::add_counter(std::string name, std::string help, std::vector<std::string> label_names) {
    std::lock_guard lock(mutex_);
    if (auto st = check_new(name, metric_type::counter, label_names); !st) return st.err();
    auto f = std::make_unique<counter_family>(std::move(name), std::move(help), std::move(label_names));
    auto * raw = f.get();
    families_.push_back(std::move(f));
    return raw;
}

result<gauge_family *> registry::add_gauge(std::string name, std::string help, std::vector<std::string> label_names) {
    std::lock_guard lock(mutex_);
    if (auto st = check_new(name, metric_type::gauge, label_names); !st) return st.err();
    auto f = std::make_unique<gauge_family>(std::move(name), std::move(help), std::move(label_names));
    auto * raw = f.get();
    families_.push_back(std::move(f));
    return raw;
}

result<histogram_family *> registry::add_histogram(std::string name, std::string help, std::vector<std::string> label_names,
                                                   std::vector<double> bounds) {
    std::lock_guard lock(mutex_);
    if (auto st = check_new(name, metric_type::histogram, label_names); !st) return st.err();
    if (!bounds.empty() && std::isinf(bounds.back()) && bounds.back() > 0) bounds.pop_back();
    for (size_t i = 0; i < bounds.size(); ++i) {
        if (!std::isfinite(bounds[i]) || (i > 0 && !(bounds[i] > bounds[i - 1])))
            return make_error(errc::invalid_argument, "histogram '" + name + "': bucket bounds must be finite and strictly increasing");
    }
    auto f = std::make_unique<histogram_family>(std::move(name), std::move(help), std::move(label_names), std::move(bounds));
    auto * raw = f.get();
    families_.push_back(std::move(f));
    return raw;
}

result<collected_family *> registry::add_collected(std::string name, std::string help, metric_type type,
                                                   std::vector<std::string> label_names) {
    std::lock_guard lock(mutex_);
    if (auto st = check_new(name, type, label_names); !st) return st.err();
    auto f = std::make_unique<collected_family>(std::move(name), std::move(help), type, std::move(label_names));
    auto * raw = f.get();
    families_.push_back(std::move(f));
    return raw;
}

void registry::add_collector(collector fn) {
    std::lock_guard lock(mutex_);
    collectors_.push_back(std::move(fn));
}

std::string registry::expose() const {
    // Collectors run without the registry lock: they take their owners' locks (the model manager's,
    // an engine's), and must not be able to deadlock against a registration.
    std::vector<collector> collectors;
    std::vector<const family_base *> families;
    {
        std::lock_guard lock(mutex_);
        collectors = collectors_;
        for (const auto & f : families_) families.push_back(f.get());
    }
    scrape_sink scraped;
    for (const auto & c : collectors) {
        try {
            c(scraped);
        } catch (const std::exception & e) {
            rc::log::warn("metrics", "collector_failed", {{"what", e.what()}});
        } catch (...) {
            rc::log::warn("metrics", "collector_failed");
        }
    }
    std::string out;
    for (const auto * f : families) f->write(out, scraped);
    return out;
}

}  // namespace rc::metrics
