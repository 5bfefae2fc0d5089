#pragma once
// The step cost model remembered across loads (issue 34): one small JSON file (serve puts it at
// <models-dir>/.state/step-cost.json) with an entry per machine configuration, so a load runs no
// timed decodes and the first request after a restart is scheduled by what the last run learned.
//
// Contract:
// * An entry is found only for the same key: model fingerprint, devices (their names and
//   descriptions: the CPU's model, the GPU), threads, batch sizes, KV cell type, flash attention.
//   Another CPU or other threads is another key, so a copied models dir never misleads.
// * A missing, unreadable or malformed file is an empty cache (logged once by the caller's use);
//   store() replaces the file atomically (write beside it, rename), keeps the newest `max_entries`
//   entries, and serialises writers within the process. Two processes may race: the last rename
//   wins and the loser's entry is re-learned — a cache, not a record.
// * Thread-safe.
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>

#include "util/result.h"

namespace rc::engine {

struct step_cost_key {
    std::string model_fingerprint;
    std::string devices;  // "CPU: Intel(R) Xeon(R) …; Vulkan0: …"
    int threads = 0;
    int n_batch = 0, n_ubatch = 0;
    std::string kv_type;
    bool flash_attn = false;

    std::string id() const;  // a digest of all of the above
};

struct step_cost_entry {
    double fixed_ms = 0;
    double per_token_ms = 0;
    size_t cell_bytes = 0;  // serialised KV per cell (0: unknown)
};

class step_cost_cache {
  public:
    static constexpr size_t max_entries = 64;

    explicit step_cost_cache(std::filesystem::path file) : file_(std::move(file)) {}

    std::optional<step_cost_entry> find(const step_cost_key & key) const;
    // Errors: io (the directory or the file cannot be written).
    status store(const step_cost_key & key, const step_cost_entry & entry) const;

    const std::filesystem::path & file() const { return file_; }

  private:
    std::filesystem::path file_;
};

// The devices part of a key, from ggml's device list.
std::string describe_devices();

}  // namespace rc::engine
