#pragma once
// Ollama's keep_alive: how long a model stays loaded after a request. A duration string in Go's
// syntax ("10m", "1h30m", "300ms"), or a number of seconds; negative means forever, 0 means unload
// once the response is produced; absent means the default of 5 minutes.
#include <chrono>
#include <optional>
#include <string_view>

#include "http/json_fields.h"

namespace rc::api::ollama {
using namespace rc::http;  // written against the HTTP shell (src/http)

constexpr std::chrono::nanoseconds keep_alive_forever = std::chrono::nanoseconds::max();
constexpr std::chrono::nanoseconds keep_alive_default = std::chrono::minutes(5);

// Go's time.ParseDuration: an optional sign, then one or more <decimal number><unit> with units
// ns, us (µs), ms, s, m, h; "0" needs no unit. nullopt when malformed or beyond ±292 years.
std::optional<std::chrono::nanoseconds> parse_go_duration(std::string_view text);

// body["keep_alive"]: nullopt when absent or null; negative values become keep_alive_forever; a bare
// number in a string counts as seconds (as OLLAMA_KEEP_ALIVE does). Throws a 400 naming keep_alive.
std::optional<std::chrono::nanoseconds> read_keep_alive(const json & body);

}  // namespace rc::api::ollama
