#include "metrics/text_format.h"

#include <charconv>
#include <cmath>

#include "util/shortest_decimal.h"
#include "util/utf8.h"

namespace rc::metrics {

namespace {

// Scrapers reject invalid UTF-8; model names and routes are ASCII, but a label value may come from
// a client, so bytes that do not decode are replaced rather than passed through.
std::string valid_utf8(std::string_view s) {
    if (utf8::is_valid(s)) return std::string(s);
    std::string out;
    size_t i = 0;
    while (i < s.size()) {
        // Take the longest valid code point starting here (1..4 bytes), else replace one byte.
        size_t len = 0;
        for (size_t n = 1; n <= 4 && i + n <= s.size(); ++n) {
            if (utf8::is_valid(s.substr(i, n))) {
                len = n;
                break;
            }
        }
        if (len == 0) {
            out += "\xEF\xBF\xBD";
            ++i;
        } else {
            out.append(s.substr(i, len));
            i += len;
        }
    }
    return out;
}

std::string escape(std::string_view raw, bool quote) {
    std::string s = valid_utf8(raw);
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        if (c == '\\') out += "\\\\";
        else if (c == '\n') out += "\\n";
        else if (c == '"' && quote) out += "\\\"";
        else out += c;
    }
    return out;
}

bool name_char(char c, bool first, bool colon) {
    bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
    return alpha || (!first && c >= '0' && c <= '9');
}

}  // namespace

std::string escape_help(std::string_view text) { return escape(text, false); }

std::string escape_label_value(std::string_view value) { return escape(value, true); }

std::string format_value(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    return shortest_decimal(v);
}

void append_labels(std::string & out, const std::vector<std::string> & names, const std::vector<std::string> & values,
                   std::string_view extra_name, std::string_view extra_value) {
    if (names.empty() && extra_name.empty()) return;
    out += '{';
    bool first = true;
    for (size_t i = 0; i < names.size(); ++i) {
        if (!first) out += ',';
        first = false;
        out += names[i];
        out += "=\"";
        out += escape_label_value(i < values.size() ? values[i] : std::string());
        out += '"';
    }
    if (!extra_name.empty()) {
        if (!first) out += ',';
        out += extra_name;
        out += "=\"";
        out += escape_label_value(extra_value);
        out += '"';
    }
    out += '}';
}

bool is_valid_metric_name(std::string_view name) {
    if (name.empty()) return false;
    for (size_t i = 0; i < name.size(); ++i) {
        if (!name_char(name[i], i == 0, true)) return false;
    }
    return true;
}

bool is_valid_label_name(std::string_view name) {
    if (name.empty() || name.rfind("__", 0) == 0) return false;
    for (size_t i = 0; i < name.size(); ++i) {
        if (!name_char(name[i], i == 0, false)) return false;
    }
    return true;
}

}  // namespace rc::metrics
