#include "hub/retry_policy.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace rc::hub {

namespace {

bool all_digits(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A run of digits as a number; nullopt when empty, not all digits, or absurdly long.
std::optional<int64_t> to_number(std::string_view s) {
    if (!all_digits(s) || s.size() > 12) return std::nullopt;
    int64_t n = 0;
    for (char c : s) n = n * 10 + (c - '0');
    return n;
}

// 0..11 for "Jan".."Dec" (case-insensitive), -1 otherwise.
int month_index(std::string_view s) {
    static constexpr std::array<const char *, 12> names = {"jan", "feb", "mar", "apr", "may", "jun",
                                                           "jul", "aug", "sep", "oct", "nov", "dec"};
    if (s.size() != 3) return -1;
    for (size_t m = 0; m < names.size(); ++m) {
        bool same = true;
        for (size_t i = 0; i < 3; ++i) same = same && std::tolower((unsigned char) s[i]) == names[m][i];
        if (same) return int(m);
    }
    return -1;
}

// The pieces of a date between spaces, commas and dashes: "Sun, 06 Nov 1994 08:49:37 GMT" →
// [Sun, 06, Nov, 1994, 08:49:37, GMT]; RFC 850 and asctime dates split the same way.
std::vector<std::string_view> date_tokens(std::string_view v) {
    std::vector<std::string_view> out;
    size_t i = 0;
    while (i < v.size()) {
        while (i < v.size() && (v[i] == ' ' || v[i] == ',' || v[i] == '-' || v[i] == '\t')) ++i;
        size_t start = i;
        while (i < v.size() && v[i] != ' ' && v[i] != ',' && v[i] != '-' && v[i] != '\t') ++i;
        if (i > start) out.push_back(v.substr(start, i - start));
    }
    return out;
}

// "08:49:37" → seconds of the day.
std::optional<int> time_of_day(std::string_view s) {
    if (s.size() != 8 || s[2] != ':' || s[5] != ':') return std::nullopt;
    auto h = to_number(s.substr(0, 2)), m = to_number(s.substr(3, 2)), sec = to_number(s.substr(6, 2));
    if (!h || !m || !sec || *h > 23 || *m > 59 || *sec > 60) return std::nullopt;
    return int(*h * 3600 + *m * 60 + *sec);
}

// Days from 1970-01-01 to the given civil date (proleptic Gregorian), without the C library's
// time-zone-dependent functions.
int64_t days_from_civil(int64_t y, int m /*1..12*/, int d) {
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const int64_t yoe = y - era * 400;
    const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

// Seconds since the epoch of an HTTP-date, any of its three forms; the weekday is not checked.
std::optional<int64_t> parse_http_date(std::string_view v) {
    int month = -1;
    std::optional<int> secs;
    std::vector<int64_t> numbers;
    std::vector<size_t> widths;
    for (auto t : date_tokens(v)) {
        if (int m = month_index(t); m >= 0) month = m;
        else if (auto tod = time_of_day(t)) secs = tod;
        else if (auto n = to_number(t)) numbers.push_back(*n), widths.push_back(t.size());
        // weekday names and "GMT" fall through
    }
    if (month < 0 || !secs || numbers.size() != 2) return std::nullopt;
    // The day has one or two digits and comes first; the year has four (two in RFC 850 dates).
    const size_t day_at = widths[0] <= 2 ? 0 : 1;
    int64_t day = numbers[day_at], year = numbers[1 - day_at];
    if (widths[1 - day_at] == 2) year += year < 70 ? 2000 : 1900;
    if (day < 1 || day > 31 || year < 1970 || year > 9999) return std::nullopt;
    return days_from_civil(year, month + 1, int(day)) * 86400 + *secs;
}

}  // namespace

milliseconds backoff_delay(const retry_settings & s, int failures, double unit_random) {
    const int doublings = std::clamp(failures - 1, 0, 30);
    const double cap = double(std::max(s.max_delay, s.base_delay).count());  // a base above the cap wins
    const double full = std::min(cap, double(s.base_delay.count()) * double(int64_t(1) << doublings));
    const double r = std::clamp(unit_random, 0.0, 1.0);
    return milliseconds(int64_t(full / 2 + r * full / 2));
}

std::optional<milliseconds> parse_retry_after(std::string_view v, std::chrono::system_clock::time_point now) {
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
    if (all_digits(v)) {
        auto n = to_number(v);
        if (!n) return milliseconds(int64_t(1) << 40);  // more digits than any cap: "a very long time"
        return milliseconds(*n * 1000);
    }
    auto at = parse_http_date(v);
    if (!at) return std::nullopt;
    const auto when = std::chrono::system_clock::time_point(std::chrono::seconds(*at));
    if (when <= now) return milliseconds(0);
    return std::chrono::ceil<milliseconds>(when - now);
}

bool is_retryable_status(long status) { return status == 429 || (status >= 500 && status <= 599); }

std::string format_wait(milliseconds d) {
    const int64_t ms = std::max<int64_t>(0, d.count());
    char buf[32];
    if (ms < 1000) std::snprintf(buf, sizeof buf, "%lldms", (long long) ms);
    else if (ms < 60000) std::snprintf(buf, sizeof buf, "%.1fs", double(ms) / 1000);
    else std::snprintf(buf, sizeof buf, "%lldm%02llds", (long long) (ms / 60000), (long long) (ms % 60000 / 1000));
    return buf;
}

}  // namespace rc::hub
