#pragma once
// The shortest decimal text that reads back as the same float/double: std::to_chars where the
// standard library has it for floating point (GCC 11+), else the shortest "%.*g" that round-trips
// (GCC 10, the Debian bullseye compiler of the glibc-2.31 release build). Both give the same value;
// the text may differ in form (fixed vs exponent) only on the old compiler.
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace rc {

inline std::string shortest_decimal(double v) {
#if defined(__cpp_lib_to_chars) && __cpp_lib_to_chars >= 201611L
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
#else
    char buf[64];
    for (int precision = 1; precision <= 17; ++precision) {
        std::snprintf(buf, sizeof buf, "%.*g", precision, v);
        if (std::strtod(buf, nullptr) == v) break;
    }
    return buf;
#endif
}

inline std::string shortest_decimal(float v) {
#if defined(__cpp_lib_to_chars) && __cpp_lib_to_chars >= 201611L
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
#else
    char buf[32];
    for (int precision = 1; precision <= 9; ++precision) {
        std::snprintf(buf, sizeof buf, "%.*g", precision, static_cast<double>(v));
        if (std::strtof(buf, nullptr) == v) break;
    }
    return buf;
#endif
}

}  // namespace rc
