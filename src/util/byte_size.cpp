#include "util/byte_size.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace rc {

std::string format_byte_size(uint64_t bytes) {
    static const char * units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = static_cast<double>(bytes);
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        ++u;
    }
    char buf[32];
    if (u == 0) std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
    else std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
    return buf;
}

std::optional<size_t> parse_byte_size(std::string_view text) {
    std::string s(text);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
    if (s.empty()) return std::nullopt;
    char * end = nullptr;
    double value = std::strtod(s.c_str(), &end);
    if (end == s.c_str() || !std::isfinite(value) || value < 0) return std::nullopt;
    std::string unit(end);
    while (!unit.empty() && unit.front() == ' ') unit.erase(unit.begin());
    for (auto & c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    double mult = 1;
    if (unit.empty() || unit == "b") mult = 1;
    else if (unit == "kib" || unit == "k") mult = 1024.0;
    else if (unit == "mib" || unit == "m") mult = 1024.0 * 1024;
    else if (unit == "gib" || unit == "g") mult = 1024.0 * 1024 * 1024;
    else if (unit == "tib" || unit == "t") mult = 1024.0 * 1024 * 1024 * 1024;
    else if (unit == "kb") mult = 1e3;
    else if (unit == "mb") mult = 1e6;
    else if (unit == "gb") mult = 1e9;
    else if (unit == "tb") mult = 1e12;
    else return std::nullopt;
    double bytes = value * mult;
    if (bytes > 1.8e19) return std::nullopt;
    return static_cast<size_t>(bytes);
}

size_t available_memory_bytes() {
    std::ifstream in("/proc/meminfo");
    std::string key;
    size_t kb = 0;
    std::string unit;
    while (in >> key >> kb >> unit) {
        if (key == "MemAvailable:") return kb * 1024;
    }
    return 0;
}

}  // namespace rc
