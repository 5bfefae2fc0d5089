#include "store/timestamps.h"

#include <cstdio>
#include <ctime>

namespace rc::store {

namespace {

std::tm utc(sys_time t) {
    std::time_t secs = std::chrono::system_clock::to_time_t(std::chrono::floor<std::chrono::seconds>(t));
    std::tm tm{};
    gmtime_r(&secs, &tm);
    return tm;
}

bool digits(std::string_view s, size_t pos, size_t n, int & out) {
    if (pos + n > s.size()) return false;
    out = 0;
    for (size_t i = pos; i < pos + n; ++i) {
        if (s[i] < '0' || s[i] > '9') return false;
        out = out * 10 + (s[i] - '0');
    }
    return true;
}

}  // namespace

std::string format_rfc3339(sys_time t) {
    std::tm tm = utc(t);
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - std::chrono::floor<std::chrono::seconds>(t)).count();
    char buf[96];  // room for any int the compiler cannot rule out
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                  tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
    return buf;
}

std::string format_compact(sys_time t) {
    std::tm tm = utc(t);
    char buf[96];
    std::snprintf(buf, sizeof buf, "%04d%02d%02dT%02d%02d%02dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                  tm.tm_min, tm.tm_sec);
    return buf;
}

std::optional<sys_time> parse_rfc3339(std::string_view s) {
    int year, mon, day, hour, min, sec;
    if (s.size() < 20 || !digits(s, 0, 4, year) || s[4] != '-' || !digits(s, 5, 2, mon) || s[7] != '-' ||
        !digits(s, 8, 2, day) || (s[10] != 'T' && s[10] != 't') || !digits(s, 11, 2, hour) || s[13] != ':' ||
        !digits(s, 14, 2, min) || s[16] != ':' || !digits(s, 17, 2, sec))
        return std::nullopt;
    if (mon < 1 || mon > 12 || day < 1 || day > 31 || hour > 23 || min > 59 || sec > 60) return std::nullopt;
    // system_clock counts nanoseconds in 64 bits: 1678–2262. Later years would overflow the
    // conversion (undefined behaviour, found by fuzz_manifest); earlier ones no manifest has.
    if (year < 1970 || year > 2261) return std::nullopt;
    size_t pos = 19;
    std::chrono::nanoseconds frac{0};
    if (s[pos] == '.') {
        ++pos;
        size_t start = pos;
        int64_t ns = 0, scale = 100000000;
        for (; pos < s.size() && s[pos] >= '0' && s[pos] <= '9'; ++pos, scale /= 10) ns += (s[pos] - '0') * scale;
        if (pos == start) return std::nullopt;
        frac = std::chrono::nanoseconds(ns);
    }
    if (pos + 1 != s.size() || (s[pos] != 'Z' && s[pos] != 'z')) return std::nullopt;
    std::tm tm{};
    tm.tm_year = year - 1900;
    tm.tm_mon = mon - 1;
    tm.tm_mday = day;
    tm.tm_hour = hour;
    tm.tm_min = min;
    tm.tm_sec = sec;
    std::time_t secs = timegm(&tm);
    return std::chrono::time_point_cast<sys_time::duration>(std::chrono::system_clock::from_time_t(secs) + frac);
}

}  // namespace rc::store
