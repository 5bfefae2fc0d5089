#pragma once
// Which models the KV disk tier holds conversations for, newest use first (issue 34: `serve
// --preload auto`). The disk tier keys blocks by a content chain, not by model name, so the model
// manager notes each model's use here — one small JSON file in the tier's directory
// (<kv-disk-dir>/recent-models.json) — when it loads a model and when it unloads it.
//
// Contract: a missing or malformed file is an empty list; note_use() rewrites the file atomically
// (beside it, then rename), keeps the newest `max_models` names, and never fails the caller (a
// write error is logged once). Thread-safe within the process.
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

namespace rc::models {

class recent_models {
  public:
    static constexpr size_t max_models = 32;

    explicit recent_models(std::filesystem::path file) : file_(std::move(file)) {}

    void note_use(const std::string & name);
    std::vector<std::string> newest_first() const;

    // The file for a disk tier's directory.
    static std::filesystem::path file_in(const std::filesystem::path & disk_dir) { return disk_dir / "recent-models.json"; }

  private:
    std::filesystem::path file_;
    mutable std::mutex mutex_;
    bool warned_ = false;
};

}  // namespace rc::models
