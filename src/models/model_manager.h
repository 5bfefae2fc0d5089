#pragma once
// Loads models on demand and hands out their engines (DESIGN.md §1: a request naming a servable
// model that is not loaded loads it; the request waits). Concurrent requests for a model that is
// loading wait for the same load. Thread-safe.
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "llama/model.h"
#include "models/local_catalog.h"
#include "util/result.h"

namespace rc::models {

struct loaded_model {
    std::string name;
    std::shared_ptr<engine::engine> engine;
    std::chrono::system_clock::time_point loaded_at;
    std::chrono::system_clock::time_point last_used;
    // How long to stay loaded after last use (Ollama's keep_alive; max() = forever). Recorded for
    // /api/ps; nothing unloads on expiry yet (the model-store issue adds the reaper and LRU).
    std::chrono::nanoseconds keep_alive = std::chrono::minutes(5);
};

class model_manager {
  public:
    model_manager(local_catalog catalog, engine::engine_options engine_opts, llama::model_load_options load_opts);
    ~model_manager();

    const local_catalog & catalog() const { return catalog_; }

    // The engine serving `name`, loading it first if needed. Errors: not_found / invalid_argument
    // (unknown or bad name), internal (load failed).
    result<std::shared_ptr<engine::engine>> acquire(const std::string & name);

    std::vector<loaded_model> loaded() const;
    bool unload(const std::string & name);
    // Records `name`'s keep_alive (see loaded_model); false when it is not loaded.
    bool set_keep_alive(const std::string & name, std::chrono::nanoseconds keep_alive);
    // True while any model is being loaded (readiness reports it).
    bool loading() const;

  private:
    local_catalog catalog_;
    engine::engine_options engine_opts_;
    llama::model_load_options load_opts_;

    mutable std::mutex mutex_;
    std::condition_variable load_done_;
    std::map<std::string, loaded_model> loaded_;
    std::map<std::string, int> loading_;  // name → waiters
};

}  // namespace rc::models
