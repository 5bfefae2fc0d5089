// Escaping and number formatting of the Prometheus text format 0.0.4.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "metrics/text_format.h"

using namespace rc::metrics;

TEST(metrics_text_format, escapes_label_values) {
    EXPECT_EQ(escape_label_value("plain"), "plain");
    EXPECT_EQ(escape_label_value(R"(a"b)"), R"(a\"b)");
    EXPECT_EQ(escape_label_value(R"(a\b)"), R"(a\\b)");
    EXPECT_EQ(escape_label_value("a\nb"), R"(a\nb)");
    EXPECT_EQ(escape_label_value("\\\"\n"), R"(\\\"\n)");
    EXPECT_EQ(escape_label_value("h\xC3\xA9llo"), "h\xC3\xA9llo");  // valid UTF-8 passes through
}

TEST(metrics_text_format, escapes_help_but_keeps_quotes) {
    EXPECT_EQ(escape_help(R"(say "hi")"), R"(say "hi")");
    EXPECT_EQ(escape_help("line1\nline2 back\\slash"), R"(line1\nline2 back\\slash)");
}

TEST(metrics_text_format, replaces_invalid_utf8) {
    EXPECT_EQ(escape_label_value("a\xFF" "b"), "a\xEF\xBF\xBD" "b");
    EXPECT_EQ(escape_help("\xC3"), "\xEF\xBF\xBD");  // truncated sequence
}

TEST(metrics_text_format, formats_numbers_like_go) {
    EXPECT_EQ(format_value(0), "0");
    EXPECT_EQ(format_value(42), "42");
    EXPECT_EQ(format_value(-3), "-3");
    EXPECT_EQ(format_value(0.005), "0.005");
    EXPECT_EQ(format_value(2.5), "2.5");
    EXPECT_EQ(format_value(0.1 + 0.2), "0.30000000000000004");  // round-trips exactly
    EXPECT_EQ(format_value(std::numeric_limits<double>::infinity()), "+Inf");
    EXPECT_EQ(format_value(-std::numeric_limits<double>::infinity()), "-Inf");
    EXPECT_EQ(format_value(std::nan("")), "NaN");
    EXPECT_EQ(std::stod(format_value(1e21)), 1e21);
}

TEST(metrics_text_format, writes_label_sets) {
    std::string out;
    append_labels(out, {}, {});
    EXPECT_EQ(out, "");
    append_labels(out, {"a", "b"}, {"x", "y\"z"});
    EXPECT_EQ(out, R"({a="x",b="y\"z"})");
    out.clear();
    append_labels(out, {}, {}, "le", "+Inf");
    EXPECT_EQ(out, R"({le="+Inf"})");
    out.clear();
    append_labels(out, {"route"}, {"/v1"}, "le", "0.5");
    EXPECT_EQ(out, R"({route="/v1",le="0.5"})");
}

TEST(metrics_text_format, validates_names) {
    EXPECT_TRUE(is_valid_metric_name("rustycage_requests_total"));
    EXPECT_TRUE(is_valid_metric_name("ns:rule_name"));
    EXPECT_TRUE(is_valid_metric_name("_x"));
    EXPECT_FALSE(is_valid_metric_name(""));
    EXPECT_FALSE(is_valid_metric_name("1abc"));
    EXPECT_FALSE(is_valid_metric_name("a-b"));
    EXPECT_FALSE(is_valid_metric_name("a b"));
    EXPECT_TRUE(is_valid_label_name("model"));
    EXPECT_TRUE(is_valid_label_name("_m1"));
    EXPECT_FALSE(is_valid_label_name("__name__"));
    EXPECT_FALSE(is_valid_label_name("a:b"));
    EXPECT_FALSE(is_valid_label_name("9a"));
    EXPECT_FALSE(is_valid_label_name(""));
}
