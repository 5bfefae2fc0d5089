#pragma once
// Loads models on demand and hands out their engines (DESIGN.md §1: a request naming a servable
// model that is not loaded loads it; the request waits). Concurrent requests for a model that is
// loading wait for the same load. Several models stay loaded at once while they fit the memory
// budget; a load that would exceed it first unloads idle models, least recently used first (a
// model is idle when no request holds its engine). Idle models whose keep_alive has run out are
// unloaded by a reaper thread. Thread-safe.
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "llama/model.h"
#include "models/local_catalog.h"
#include "models/memory_estimate.h"
#include "util/result.h"

namespace rc::models {

struct loaded_model {
    std::string name;
    std::shared_ptr<engine::engine> engine;
    std::chrono::system_clock::time_point loaded_at;
    std::chrono::system_clock::time_point last_used;  // last acquired, or last seen in use
    // How long to stay loaded once idle (Ollama's keep_alive; nanoseconds::max() = forever).
    std::chrono::nanoseconds keep_alive = std::chrono::minutes(5);
    uint64_t memory = 0;  // the estimate it was admitted with (memory_estimate.h)
};

struct manager_options {
    uint64_t memory_budget = 0;  // bytes all loaded models may take together; 0: no limit
    std::chrono::nanoseconds default_keep_alive = std::chrono::minutes(5);
    // How long a load waits for busy models to become idle when the budget is full.
    std::chrono::milliseconds busy_wait = std::chrono::minutes(5);
};

class model_manager {
  public:
    model_manager(local_catalog catalog, engine::engine_options engine_opts, llama::model_load_options load_opts,
                  manager_options opts = {});
    ~model_manager();

    const local_catalog & catalog() const { return catalog_; }
    const manager_options & options() const { return opts_; }
    const engine::engine_options & engine_options() const { return engine_opts_; }

    // The engine serving `name`, loading it first if needed. Errors: not_found / invalid_argument
    // (unknown or bad name, a model still quarantined or failed, a model larger than the whole
    // budget), unavailable (the budget is held by busy models), internal (load failed).
    result<std::shared_ptr<engine::engine>> acquire(const std::string & name);

    std::vector<loaded_model> loaded() const;
    bool unload(const std::string & name);
    // Records `name`'s keep_alive (see loaded_model); false when it is not loaded.
    bool set_keep_alive(const std::string & name, std::chrono::nanoseconds keep_alive);
    // True while any model is being loaded (readiness reports it).
    bool loading() const;
    uint64_t memory_in_use() const;

    // One pass of the keep_alive reaper (the thread runs it every second); public for tests.
    void reap_expired();

  private:
    // Unloads idle models (LRU first) until `need` more bytes fit; waits for busy ones up to
    // opts_.busy_wait. Called with `lock` held; may release it while waiting.
    status make_room(std::unique_lock<std::mutex> & lock, uint64_t need, const std::string & for_name);
    std::string key_of(const std::string & requested) const;

    local_catalog catalog_;
    engine::engine_options engine_opts_;
    llama::model_load_options load_opts_;
    manager_options opts_;

    mutable std::mutex mutex_;
    std::condition_variable load_done_;
    std::map<std::string, loaded_model> loaded_;
    std::map<std::string, uint64_t> loading_;  // name → memory reserved for the load

    std::condition_variable reaper_wake_;
    bool stopping_ = false;
    std::thread reaper_;
};

}  // namespace rc::models
