#pragma once
// Client input as it may appear in an error message or a log line: bounded and printable. A name
// echoed back raw could carry control bytes (a NUL cuts C strings and terminals), be megabytes long
// or forge log lines; safe_quote() keeps the first bytes, escapes the rest of the byte range.
#include <cstddef>
#include <string>
#include <string_view>

namespace rc {

// Model and file names are echoed up to this many bytes: every real one fits.
inline constexpr size_t max_echoed_name = 200;

// "'text'" with bytes outside printable ASCII as \xNN and anything past `max_bytes` as "...".
std::string safe_quote(std::string_view text, size_t max_bytes = 64);

}  // namespace rc
