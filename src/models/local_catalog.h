#pragma once
// The models a server can serve from its models directory. Today: loose `*.gguf` files, servable
// under their file name without `.gguf` (the model-store issue adds manifests and blobs).
// Thread-safe: every call reads the directory afresh, so a file dropped in is servable at once.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "util/result.h"

namespace rc::models {

struct model_entry {
    std::string name;         // e.g. "demo" for demo.gguf
    std::filesystem::path path;
    uint64_t size_bytes = 0;
    std::chrono::system_clock::time_point modified;
};

// Names a client may use: no path separators, no leading dot, printable ASCII, <= 200 chars.
bool is_valid_model_name(const std::string & name);

class local_catalog {
  public:
    explicit local_catalog(std::filesystem::path dir) : dir_(std::move(dir)) {}
    const std::filesystem::path & dir() const { return dir_; }

    std::vector<model_entry> list() const;  // sorted by name
    // Accepts "demo", "demo.gguf" and Ollama's "demo:latest". Errors: invalid_argument, not_found.
    result<model_entry> find(const std::string & name) const;

  private:
    std::filesystem::path dir_;
};

}  // namespace rc::models
