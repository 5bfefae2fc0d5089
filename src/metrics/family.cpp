#include "metrics/family.h"

#include "metrics/registry.h"
#include "metrics/text_format.h"

namespace rc::metrics {

void family_base::write_header(std::string & out) const {
    out += "# HELP ";
    out += name_;
    out += ' ';
    out += escape_help(help_);
    out += "\n# TYPE ";
    out += name_;
    out += ' ';
    out += metric_type_name(type_);
    out += '\n';
}

namespace {

void write_sample(std::string & out, const std::string & name, const std::vector<std::string> & label_names,
                  const std::vector<std::string> & values, double v) {
    out += name;
    append_labels(out, label_names, values);
    out += ' ';
    out += format_value(v);
    out += '\n';
}

// One histogram series: cumulative buckets (the last is +Inf), _sum, _count.
void write_histogram(std::string & out, const std::string & name, const std::vector<std::string> & label_names,
                     const std::vector<std::string> & values, const std::vector<double> & bounds, const std::vector<uint64_t> & cumulative,
                     double sum) {
    const std::string bucket = name + "_bucket";
    for (size_t i = 0; i <= bounds.size(); ++i) {
        out += bucket;
        append_labels(out, label_names, values, "le", i < bounds.size() ? format_value(bounds[i]) : "+Inf");
        out += ' ';
        out += std::to_string(cumulative[i]);
        out += '\n';
    }
    write_sample(out, name + "_sum", label_names, values, sum);
    write_sample(out, name + "_count", label_names, values, static_cast<double>(cumulative.back()));
}

}  // namespace

template <class T>
void family<T>::write(std::string & out, const scrape_sink &) const {
    std::shared_lock lock(mutex_);
    if (children_.empty()) return;
    write_header(out);
    for (const auto & [values, child] : children_) {
        if constexpr (std::is_same_v<T, histogram>) {
            auto snap = child->collect();
            write_histogram(out, name(), label_names(), values, bounds_, snap.cumulative, snap.sum);
        } else {
            write_sample(out, name(), label_names(), values, child->value());
        }
    }
}

template class family<counter>;
template class family<gauge>;
template class family<histogram>;

void collected_family::write(std::string & out, const scrape_sink & scraped) const {
    if (type() == metric_type::histogram) {
        const auto * hs = scraped.histograms(*this);
        if (!hs || hs->empty()) return;
        write_header(out);
        for (const auto & [values, h] : *hs) write_histogram(out, name(), label_names(), values, h.bounds, h.cumulative, h.sum);
        return;
    }
    const auto * samples = scraped.samples(*this);
    if (!samples || samples->empty()) return;
    write_header(out);
    for (const auto & [values, v] : *samples) write_sample(out, name(), label_names(), values, v);
}

}  // namespace rc::metrics
