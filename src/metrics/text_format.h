#pragma once
// Pieces of the Prometheus text exposition format 0.0.4: escaping and number formatting.
// https://prometheus.io/docs/instrumenting/exposition_formats/
#include <string>
#include <string_view>
#include <vector>

namespace rc::metrics {

// The Content-Type of an exposition (what Prometheus and promtool expect).
inline constexpr const char * text_content_type = "text/plain; version=0.0.4; charset=utf-8";

// HELP text: backslash → \\, newline → \n. Invalid UTF-8 bytes become U+FFFD.
std::string escape_help(std::string_view text);
// Label value: backslash → \\, double quote → \", newline → \n. Invalid UTF-8 bytes become U+FFFD.
std::string escape_label_value(std::string_view value);
// A sample value or `le` bound as Go's strconv formats it: shortest round-trip digits, and
// "+Inf", "-Inf", "NaN".
std::string format_value(double v);

// `{a="x",b="y"}` (empty when there are no labels); `extra_name`/`extra_value` append one more
// label (the histogram `le`) when `extra_name` is not empty.
void append_labels(std::string & out, const std::vector<std::string> & names, const std::vector<std::string> & values,
                   std::string_view extra_name = {}, std::string_view extra_value = {});

// Metric names: [a-zA-Z_:][a-zA-Z0-9_:]*. Label names: [a-zA-Z_][a-zA-Z0-9_]*, not starting "__"
// (reserved for Prometheus itself).
bool is_valid_metric_name(std::string_view name);
bool is_valid_label_name(std::string_view name);

}  // namespace rc::metrics
