#pragma once
// Durable, append-only incident records (a model that failed its quarantine check, a digest that
// did not match, a load that crashed) as JSON lines in <root>/incidents.jsonl, one object a line:
//   {"id":"inc-20261129T123456Z-1a2b3c4d","time":"2026-11-29T12:34:56.789Z","kind":"...",
//    "model":"...","reason":"...","details":{...}}
// Appends are whole lines under flock with O_APPEND and fsync, so writers in several processes
// never interleave. A line torn by a crash is skipped by list() and fenced off by the next append.
#include <cstddef>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/timestamps.h"
#include "util/result.h"

namespace rc::store {

struct incident {
    std::string id;  // "inc-<compact UTC time>-<8 random hex>": sortable and unique
    sys_time time{};
    std::string kind;
    std::string model;
    std::string reason;
    nlohmann::ordered_json details = nlohmann::ordered_json::object();
};

class incident_log {
  public:
    static constexpr const char * file_name = "incidents.jsonl";

    explicit incident_log(std::filesystem::path file) : file_(std::move(file)) {}
    static incident_log in_store(const std::filesystem::path & root) { return incident_log(root / file_name); }
    const std::filesystem::path & path() const { return file_; }

    // Appends and fsyncs one record; returns it as written. Errors: io.
    result<incident> record(std::string kind, std::string model, std::string reason,
                            nlohmann::ordered_json details = nlohmann::ordered_json::object());

    // Newest first (file order reversed, not clock order), at most `limit`, optionally only those
    // whose `model` equals `model`. Unparsable lines are skipped; a missing file is an empty list.
    std::vector<incident> list(size_t limit = 100, const std::optional<std::string> & model = std::nullopt) const;

  private:
    std::filesystem::path file_;
    std::mutex mu_;  // flock alone would serialise processes, not threads sharing one descriptor
};

}  // namespace rc::store
