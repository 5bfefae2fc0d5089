#pragma once
// API keys from a file instead of the command line: argv is readable by every local user (`ps`,
// /proc/<pid>/cmdline) and the environment by anything the process starts, so `serve --api-key-file`
// and `agent --api-key-file` take keys from a private file (docs/SECURITY.md "API keys").
//
// The file: one key per line; blank lines and lines starting with '#' are skipped; spaces, tabs and
// a '\r' around a key are trimmed. It must be a regular file (a symlink to one is followed), not
// readable or writable by group or others, at most k_max_api_key_file_bytes, and hold at least one
// key; every key must pass check_api_keys(). Errors name the file and the reason, never a key.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace rc::http {

inline constexpr size_t k_max_api_key_file_bytes = 64 * 1024;

// Errors: not_found / io (cannot be opened or read), invalid_argument (not a regular file, group- or
// world-accessible, too large, no key, a key check_api_keys refuses).
result<std::vector<std::string>> read_api_key_file(const std::string & path);

// A comma-separated key list (--api-keys, RUSTYCAGE_API_KEYS), trimmed. Empty entries are kept so
// that check_api_keys refuses them: "--api-keys $UNSET" or a stray comma must stop a server, not
// start it with a key list that means something else than written.
std::vector<std::string> split_api_key_list(std::string_view list);

}  // namespace rc::http
