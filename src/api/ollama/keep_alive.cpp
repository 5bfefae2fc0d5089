#include "api/ollama/keep_alive.h"

#include <cmath>
#include <cstdlib>
#include <string>

#include "http/api_error.h"

namespace rc::api::ollama {
using namespace rc::http;  // written against the HTTP shell (src/http)

namespace {

// Nanoseconds per unit, or 0 when `unit` is not one.
double unit_ns(std::string_view unit) {
    if (unit == "ns") return 1;
    if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs") return 1e3;  // µ (micro sign or Greek mu)
    if (unit == "ms") return 1e6;
    if (unit == "s") return 1e9;
    if (unit == "m") return 60e9;
    if (unit == "h") return 3600e9;
    return 0;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// A finite double from the whole of `s`, or nullopt.
std::optional<double> parse_number(const std::string & s) {
    if (s.empty()) return std::nullopt;
    char * end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size() || !std::isfinite(v)) return std::nullopt;
    return v;
}

std::chrono::nanoseconds from_seconds(double secs) {
    if (secs < 0) return keep_alive_forever;
    double ns = secs * 1e9;
    // Anything beyond int64 nanoseconds (292 years) is forever in practice.
    if (ns >= 9.2e18) return keep_alive_forever;
    return std::chrono::nanoseconds(static_cast<long long>(ns));
}

}  // namespace

std::optional<std::chrono::nanoseconds> parse_go_duration(std::string_view text) {
    std::string_view s = text;
    bool negative = false;
    if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
        negative = s[0] == '-';
        s.remove_prefix(1);
    }
    if (s == "0") return std::chrono::nanoseconds(0);
    if (s.empty()) return std::nullopt;
    // Exact integer nanoseconds for the whole parts, as Go does; fractions add at most one unit.
    long double total = 0;
    while (!s.empty()) {
        size_t i = 0;
        while (i < s.size() && is_digit(s[i])) ++i;
        size_t int_digits = i;
        size_t frac_digits = 0;
        if (i < s.size() && s[i] == '.') {
            ++i;
            while (i < s.size() && is_digit(s[i])) ++i, ++frac_digits;
        }
        if (int_digits == 0 && frac_digits == 0) return std::nullopt;  // "", ".", "m"
        std::string number(s.substr(0, i));
        s.remove_prefix(i);
        size_t u = 0;
        while (u < s.size() && !is_digit(s[u]) && s[u] != '.') ++u;
        double mult = unit_ns(s.substr(0, u));
        if (mult == 0) return std::nullopt;  // missing or unknown unit
        s.remove_prefix(u);
        total += std::strtold(number.c_str(), nullptr) * static_cast<long double>(mult);
        if (total > 9223372036854775807.0L) return std::nullopt;
    }
    auto ns = static_cast<long long>(total);
    return std::chrono::nanoseconds(negative ? -ns : ns);
}

std::optional<std::chrono::nanoseconds> read_keep_alive(const json & body) {
    auto it = body.find("keep_alive");
    if (it == body.end() || it->is_null()) return std::nullopt;
    const char * bad = "'keep_alive' must be a duration such as \"5m\", \"1h30m\" or \"300ms\", or a number of seconds";
    if (it->is_number()) return from_seconds(it->get<double>());
    if (!it->is_string()) bad_request(bad, "keep_alive");
    std::string s = it->get<std::string>();
    if (auto secs = parse_number(s)) return from_seconds(*secs);
    auto d = parse_go_duration(s);
    if (!d) bad_request(std::string(bad) + "; got \"" + s + "\"", "keep_alive");
    return d->count() < 0 ? keep_alive_forever : *d;
}

}  // namespace rc::api::ollama
