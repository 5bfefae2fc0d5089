#pragma once
// The shortest decimal text that reads back as the same float/double: std::to_chars where the
// standard library has it for floating point (GCC 11+), else the shortest "%.*g" that round-trips
// (GCC 10, the Debian bullseye compiler of the glibc-2.31 release build). Both give the same value;
// the text may differ in form (fixed vs exponent) only on the old compiler.
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <type_traits>

namespace rc {

template <typename F>
std::string shortest_decimal(F v) {
    static_assert(std::is_same_v<F, float> || std::is_same_v<F, double>);
    char buf[64];
#if defined(__cpp_lib_to_chars) && __cpp_lib_to_chars >= 201611L
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
#else
    for (int precision = 1; precision <= std::numeric_limits<F>::max_digits10; ++precision) {
        std::snprintf(buf, sizeof buf, "%.*g", precision, static_cast<double>(v));
        const F back = std::is_same_v<F, float> ? std::strtof(buf, nullptr) : static_cast<F>(std::strtod(buf, nullptr));
        if (back == v) break;
    }
    return buf;
#endif
}

}  // namespace rc
