#pragma once
// Reading a small file the process wrote itself (a state file, a manifest, a key), which it must
// still not trust: only a regular file (a FIFO in its place would block the reader for ever, a
// device or a directory is never ours), never through a symlink, and never larger than the caller
// says (a garbage file must not make us allocate gigabytes).
#include <cstddef>
#include <filesystem>
#include <string>

#include "util/result.h"

namespace rc {

// The whole file. Errors: not_found (absent), invalid_argument ("not a regular file: <path>", "file
// too large (N bytes): <path>"), io (open or read failed, with strerror).
result<std::string> read_small_file(const std::filesystem::path & path, size_t max_bytes);

}  // namespace rc
