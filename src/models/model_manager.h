#pragma once
// Loads models on demand and lends out their engines (ARCHITECTURE.md §1: a request naming a servable
// model that is not loaded loads it; the request waits). Concurrent requests for a model that is
// loading wait for the same load. Several models stay loaded at once while they fit the memory
// budget; a load that would exceed it first unloads idle models, least recently used first.
//
// A request holds its model through a `model_lease`: while any lease exists the model is busy and
// is never unloaded for room or by keep_alive (an explicit unload takes it off the list at once; its
// running requests finish). Observers — /api/ps, /metrics — read `loaded()` / `visit_loaded()` and
// hold nothing, so looking at a model never makes it look used.
//
// Threads: every public call is thread-safe. Engines are torn down (their thread joined, their
// context freed) only on the manager's reaper thread, never on a request's thread; the reaper also
// unloads idle models whose keep_alive ran out, waking exactly when the next one is due.
// Keep-alive runs on steady_clock (wall-clock jumps never unload a model early or keep it forever).
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "llama/model.h"
#include "models/local_catalog.h"
#include "models/recent_models.h"
#include "models/memory_estimate.h"
#include "models/model_fit.h"
#include "util/result.h"

namespace rc::models {

class model_manager;
namespace detail {
struct model_slot;  // a loaded model's bookkeeping (model_manager.cpp)
}

// One request's hold on a loaded model. Move-only; the hold ends when it is destroyed (or released).
// Valid only while the manager that lent it lives.
class model_lease {
  public:
    model_lease() = default;
    model_lease(model_lease && other) noexcept { *this = std::move(other); }
    model_lease & operator=(model_lease && other) noexcept;
    model_lease(const model_lease &) = delete;
    model_lease & operator=(const model_lease &) = delete;
    ~model_lease() { release(); }

    explicit operator bool() const { return slot_ != nullptr; }
    engine::engine & engine() const;
    const std::string & name() const;  // the catalog name ("demo", "hf.co/o/r:Q4_K_M")

    // How long the model stays loaded once no lease holds it (Ollama's keep_alive; 0: unload as soon
    // as the last lease ends; nanoseconds::max(): never unload for idleness).
    void set_keep_alive(std::chrono::nanoseconds keep_alive);
    // Ends the hold now (idempotent).
    void release();

  private:
    friend class model_manager;
    model_lease(model_manager * owner, std::shared_ptr<detail::model_slot> s, bool observer = false)
        : owner_(owner), slot_(std::move(s)), observer_(observer) {}

    model_manager * owner_ = nullptr;
    std::shared_ptr<detail::model_slot> slot_;
    bool observer_ = false;  // peek(): its end is not a use of the model
};

// A loaded model as observers see it: plain values, nothing that keeps it loaded.
struct loaded_model {
    std::string name;
    std::chrono::system_clock::time_point loaded_at;
    std::chrono::nanoseconds keep_alive{0};
    // When keep_alive would unload it, in wall-clock time for display: time_point::max() = never;
    // while leases hold it, counted from now (it has not started idling).
    std::chrono::system_clock::time_point expires_at;
    int leases = 0;       // requests holding it now
    uint64_t memory = 0;  // the estimate it was admitted with (memory_estimate.h)
    device_plan device;   // its fit to device memory (model_fit.h)
};

struct manager_options {
    uint64_t memory_budget = 0;  // bytes all loaded models may take together; 0: no limit
    std::chrono::nanoseconds default_keep_alive = std::chrono::minutes(5);
    // How long a load waits for busy models to become idle when the budget is full.
    std::chrono::milliseconds busy_wait = std::chrono::minutes(5);
    fit_settings fit;  // how each load is fitted to device memory (model_fit.h)
    // Called on the reaper thread once a model's engine is gone (logs, tests). Must not call back
    // into the manager.
    std::function<void(const std::string & name)> on_unloaded;
};

class model_manager {
  public:
    model_manager(local_catalog catalog, engine::engine_options engine_opts, llama::model_load_options load_opts,
                  manager_options opts = {});
    // Tears down every engine (on the calling thread: the reaper is stopped first). No lease may
    // outlive the manager.
    ~model_manager();

    const local_catalog & catalog() const { return catalog_; }
    const manager_options & options() const { return opts_; }
    const engine::engine_options & engine_options() const { return engine_opts_; }

    // A lease on `entry` (as the catalog found it: no second lookup), loading it first if needed.
    // Errors: invalid_argument (a model still quarantined or failed, or larger than the whole budget),
    // unavailable (the budget is held by busy models for longer than busy_wait), internal (load failed).
    result<model_lease> acquire(const model_entry & entry);
    // The same by name (one catalog lookup). Errors as above, plus not_found / invalid_argument for
    // unknown or malformed names.
    result<model_lease> acquire(const std::string & name);

    // A hold on `name` only when it is loaded now (nullopt otherwise): never loads, waits for no load,
    // and is not a use — its end leaves the model's keep_alive clock as it was. For routes that ask a
    // loaded engine something without serving a request (POST /v1/kv/lookup).
    std::optional<model_lease> peek(const std::string & name);

    // Snapshots of the loaded models, sorted by name. An unloaded model leaves this list at once,
    // even while its last requests still run.
    std::vector<loaded_model> loaded() const;
    // Calls `f` for each loaded model with its engine, under the manager's lock: `f` must be quick
    // (read stats) and must not call the manager.
    void visit_loaded(const std::function<void(const loaded_model &, const engine::engine &)> & f) const;

    // Takes `name` off the loaded list now; its engine is torn down on the reaper thread once its
    // running requests end. False when it was not loaded.
    bool unload(const std::string & name);
    // True while any model is being loaded (readiness reports it).
    bool loading() const;
    // Loaded, loading and not yet torn down models together (the budget's view).
    uint64_t memory_in_use() const;
    // The same on the fitted device (model_fit.h).
    uint64_t device_in_use() const;

  private:
    friend class model_lease;
    using steady = std::chrono::steady_clock;
    using slot = detail::model_slot;
    using lock_t = std::unique_lock<std::mutex>;

    // Unloads idle models (LRU first) until `need` more bytes fit; waits (without polling) for busy
    // ones to become idle up to opts_.busy_wait. Called with `lock` held; releases it while waiting.
    status make_room(lock_t & lock, uint64_t need, const std::string & for_name);
    uint64_t used_locked() const;
    uint64_t device_used_locked() const;
    // Fits `entry` to device memory beside the other models, unloading idle ones (LRU first) while
    // they keep it from its whole fit. Lock held; released while measuring.
    result<device_plan> fit_locked(lock_t & lock, const model_entry & entry);
    // Moves a loaded slot to the teardown list and wakes the reaper. Lock held.
    void retire_locked(const std::string & name);
    void release(slot & s, bool observer);
    void reaper_loop();
    loaded_model view_locked(const slot & s, steady::time_point now) const;

    local_catalog catalog_;
    engine::engine_options engine_opts_;
    std::unique_ptr<recent_models> recent_;  // with a KV disk tier: which models it holds conversations for
    llama::model_load_options load_opts_;
    manager_options opts_;

    mutable std::mutex mutex_;
    std::condition_variable changed_;       // a load ended, a lease ended, an engine was torn down
    std::condition_variable reaper_wake_;   // teardown work, or a keep-alive deadline moved
    std::map<std::string, std::shared_ptr<slot>> loaded_;
    std::vector<std::shared_ptr<slot>> retiring_;  // off the list; torn down once no lease holds them
    struct reservation {
        uint64_t memory = 0, device = 0;
    };
    std::map<std::string, reservation> loading_;   // name → memory reserved for the load
    bool stopping_ = false;
    std::thread reaper_;
};

}  // namespace rc::models
