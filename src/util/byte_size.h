#pragma once
// Byte sizes as people write them: "4GiB", "512MiB", "1.5GB", "1000000". Binary (KiB, MiB, GiB,
// TiB) and decimal (KB, MB, GB, TB) units; case-insensitive; a bare number is bytes.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rc {

std::optional<size_t> parse_byte_size(std::string_view text);

// "1.5 GiB", "512.0 MiB", "87 B": binary units, one decimal (for messages and listings).
std::string format_byte_size(uint64_t bytes);

// MemAvailable from /proc/meminfo, or 0 when unknown.
size_t available_memory_bytes();

}  // namespace rc
