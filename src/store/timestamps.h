#pragma once
// UTC timestamps as the store writes them: RFC 3339 with milliseconds ("2026-11-29T12:34:56.789Z")
// in manifests and incident records, and a compact form ("20261129T123456Z") inside incident ids.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace rc::store {

using sys_time = std::chrono::system_clock::time_point;

std::string format_rfc3339(sys_time t);
std::string format_compact(sys_time t);

// Accepts "YYYY-MM-DDTHH:MM:SS[.fraction]Z" (what format_rfc3339 writes; 't'/'z' too); nullopt for
// anything else, including offsets other than Z.
std::optional<sys_time> parse_rfc3339(std::string_view s);

}  // namespace rc::store
