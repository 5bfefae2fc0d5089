#include "models/model_manager.h"

#include <algorithm>
#include <cassert>
#include <regex>

#include "store/incident_log.h"
#include "util/byte_size.h"
#include "util/log.h"

namespace rc::models {

namespace {

// A model that fails to load is an incident in the store's own log (`rustycage show` lists it; a
// fleet agent forwards it): the structured record, not the log line, is what others read.
void record_load_failure(const local_catalog & catalog, const model_entry & entry, const error & failure, const device_plan & plan) {
    static const std::regex oom(R"(out of memory|failed to allocate|cannot allocate|\bOOM\b|insufficient memory)", std::regex::icase);
    nlohmann::ordered_json details = {{"error", failure.message}};
    if (plan.fitted) details["fit"] = plan.to_json();
    if (!entry.digest.empty()) details["layers"] = nlohmann::ordered_json::array({entry.digest});
    auto r = store::incident_log::in_store(catalog.dir())
                 .record(std::regex_search(failure.message, oom) ? "out_of_memory" : "model_load_failed", entry.name, failure.message, details);
    if (!r) rc::log::warn("models", "incident_not_recorded", {{"model", entry.name}, {"error", r.err().message}});
}

// The startup log's account of a fit: what went on the device, and what the tiers will hold.
void log_fit(const std::string & name, const device_plan & p) {
    const auto lvl = p.whole() ? rc::log::level::info : rc::log::level::warn;
    rc::log::write(lvl, "models", p.whole() ? "fitted" : "fitted_smaller",
                   {{"model", name}, {"device", p.device}, {"device_memory", p.device_total}, {"layers", p.layers}, {"layers_total", p.layers_total},
                    {"context_cells", p.cells}, {"cells_wanted", p.cells_wanted}, {"device_bytes", p.device_bytes}, {"weights_bytes", p.weights_bytes},
                    {"context_bytes", p.context_bytes}, {"compute_bytes", p.compute_bytes}, {"host_bytes", p.host_bytes}});
}

}  // namespace

// Everything the manager knows about one loaded model. Guarded by the manager's mutex, except
// `engine`, which is set before the slot is published and reset only by the reaper once no lease
// can reach it (leases == 0 and retiring: no new lease is handed out).
struct detail::model_slot {
    std::string name;
    std::unique_ptr<engine::engine> engine;
    std::chrono::system_clock::time_point loaded_at;
    std::chrono::steady_clock::time_point idle_since;  // when the last lease ended (or the load did)
    std::chrono::nanoseconds keep_alive{0};
    uint64_t memory = 0;
    device_plan device;
    int leases = 0;
    bool retiring = false;     // off the loaded list: no new leases
    bool tearing_down = false; // the reaper is destroying the engine
};

namespace {

constexpr auto forever = std::chrono::nanoseconds::max();

// When an idle slot's keep_alive runs out; max() for never.
std::chrono::steady_clock::time_point idle_deadline(const detail::model_slot & s) {
    using steady = std::chrono::steady_clock;
    if (s.keep_alive == forever) return steady::time_point::max();
    auto d = std::chrono::duration_cast<steady::duration>(s.keep_alive);
    if (s.idle_since > steady::time_point::max() - d) return steady::time_point::max();
    return s.idle_since + d;
}

}  // namespace

// --- model_lease ---------------------------------------------------------------------------------

model_lease & model_lease::operator=(model_lease && other) noexcept {
    if (this != &other) {
        release();
        owner_ = other.owner_;
        slot_ = std::move(other.slot_);
        observer_ = other.observer_;
        other.owner_ = nullptr;
    }
    return *this;
}

engine::engine & model_lease::engine() const {
    assert(slot_ && "engine() on an empty lease");
    return *slot_->engine;
}

const std::string & model_lease::name() const {
    assert(slot_ && "name() on an empty lease");
    return slot_->name;
}

void model_lease::set_keep_alive(std::chrono::nanoseconds keep_alive) {
    if (!slot_) return;
    {
        std::lock_guard lock(owner_->mutex_);
        slot_->keep_alive = keep_alive;
    }
    owner_->reaper_wake_.notify_one();
}

void model_lease::release() {
    if (!slot_) return;
    owner_->release(*slot_, observer_);
    slot_.reset();
    owner_ = nullptr;
}

// --- model_manager -------------------------------------------------------------------------------

model_manager::model_manager(local_catalog catalog, engine::engine_options engine_opts, llama::model_load_options load_opts, manager_options opts)
    : catalog_(std::move(catalog)), engine_opts_(engine_opts), load_opts_(load_opts), opts_(std::move(opts)) {
    if (!engine_opts_.kv.disk_dir.empty()) recent_ = std::make_unique<recent_models>(recent_models::file_in(engine_opts_.kv.disk_dir));
    reaper_ = std::thread([this] { reaper_loop(); });
}

model_manager::~model_manager() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    reaper_wake_.notify_all();
    reaper_.join();
    std::lock_guard lock(mutex_);
    for (const auto & [name, s] : loaded_) {
        assert(s->leases == 0 && "a model_lease outlived its manager");
        if (recent_) recent_->note_use(name);  // in use until now: the next `--preload auto` loads it
    }
    loaded_.clear();
    retiring_.clear();
}

uint64_t model_manager::used_locked() const {
    uint64_t sum = 0;
    for (const auto & [n, s] : loaded_) sum += s->memory;
    for (const auto & s : retiring_) sum += s->memory;
    for (const auto & [n, r] : loading_) sum += r.memory;
    return sum;
}

uint64_t model_manager::device_used_locked() const {
    uint64_t sum = 0;
    for (const auto & [n, s] : loaded_) sum += s->device.device_bytes;
    for (const auto & s : retiring_) sum += s->device.device_bytes;
    for (const auto & [n, r] : loading_) sum += r.device;
    return sum;
}

uint64_t model_manager::device_in_use() const {
    std::lock_guard lock(mutex_);
    return device_used_locked();
}

result<device_plan> model_manager::fit_locked(lock_t & lock, const model_entry & entry) {
    for (;;) {
        const uint64_t host = opts_.memory_budget > 0 ? opts_.memory_budget - std::min(opts_.memory_budget, used_locked()) : UINT64_MAX;
        const uint64_t others = device_used_locked();
        uint64_t loading = 0;
        for (const auto & [n, r] : loading_) loading += r.device;
        lock.unlock();
        auto plan = plan_device(entry, engine_opts_, load_opts_, opts_.fit, others, loading, host);
        lock.lock();
        if (others == 0 || (plan && (!plan->fitted || plan->whole()))) return plan;
        // Idle models hold what this one needs: the least recently used goes (Ollama's way); a model
        // being torn down is waited for. Otherwise this one fits as it can, or not at all.
        std::shared_ptr<slot> victim;
        for (const auto & [n, s] : loaded_)
            if (s->leases == 0 && s->device.device_bytes > 0 && (!victim || s->idle_since < victim->idle_since)) victim = s;
        if (victim) {
            rc::log::info("models", "unloading_for_device", {{"model", victim->name}, {"for", entry.name}, {"freed", victim->device.device_bytes}});
            retire_locked(victim->name);
        }
        bool freeing = false;
        for (const auto & s : retiring_) freeing = freeing || (s->leases == 0 && s->device.device_bytes > 0);
        if (!freeing) return plan;
        changed_.wait(lock);  // a teardown always ends, and frees its device memory
    }
}

uint64_t model_manager::memory_in_use() const {
    std::lock_guard lock(mutex_);
    return used_locked();
}

void model_manager::retire_locked(const std::string & name) {
    auto it = loaded_.find(name);
    if (it == loaded_.end()) return;
    it->second->retiring = true;
    retiring_.push_back(std::move(it->second));
    loaded_.erase(it);
    reaper_wake_.notify_one();
}

status model_manager::make_room(lock_t & lock, uint64_t need, const std::string & for_name) {
    if (opts_.memory_budget == 0) return {};
    if (need > opts_.memory_budget)
        return make_error(errc::invalid_argument, "model '" + for_name + "' needs about " + format_byte_size(need) + ", more than the whole memory budget of " +
                                                      format_byte_size(opts_.memory_budget) + " (--memory-budget)");
    const auto deadline = steady::now() + opts_.busy_wait;
    for (;;) {
        const uint64_t used = used_locked();
        if (used + need <= opts_.memory_budget) return {};
        // Retired models nobody holds are being torn down: their memory is as good as free.
        uint64_t freeing = 0;
        for (const auto & s : retiring_)
            if (s->leases == 0) freeing += s->memory;
        if (freeing > 0 && used - freeing + need <= opts_.memory_budget) {
            changed_.wait(lock);  // a teardown always ends, and frees its memory
            continue;
        }
        std::shared_ptr<slot> victim;
        for (const auto & [n, s] : loaded_)
            if (s->leases == 0 && (!victim || s->idle_since < victim->idle_since)) victim = s;
        if (victim) {
            rc::log::info("models", "unloading_for_room", {{"model", victim->name}, {"for", for_name}, {"freed", victim->memory}});
            retire_locked(victim->name);
            continue;
        }
        if (freeing > 0) {
            changed_.wait(lock);
            continue;
        }
        if (steady::now() >= deadline)
            return make_error(errc::unavailable, "the memory budget (" + format_byte_size(opts_.memory_budget) + ") is held by busy models; '" + for_name +
                                                     "' cannot be loaded now, retry later");
        // Woken when a lease ends (a busy model may be idle now) or an engine is gone: no polling.
        changed_.wait_until(lock, deadline);
    }
}

result<model_lease> model_manager::acquire(const std::string & requested) {
    auto entry = catalog_.find(requested);
    if (!entry) return entry.err();
    return acquire(entry.value());
}

result<model_lease> model_manager::acquire(const model_entry & entry) {
    if (!entry.servable()) {
        std::string why = entry.status == store::model_status::failed ? "failed its quarantine check: " + entry.status_reason
                                                                        : "is quarantined until its check passes";
        return make_error(errc::invalid_argument, "model '" + entry.name + "' " + why);
    }
    const std::string & name = entry.name;

    lock_t lock(mutex_);
    for (;;) {
        if (stopping_) return make_error(errc::unavailable, "the server is stopping");
        if (auto it = loaded_.find(name); it != loaded_.end()) {
            ++it->second->leases;
            return model_lease(this, it->second);
        }
        if (!loading_.count(name)) break;
        changed_.wait(lock);  // another request is loading it; its result serves us too
    }
    loading_[name] = {};  // claims the load before fit_locked and make_room may release the lock
    auto plan = fit_locked(lock, entry);
    if (!plan) {
        loading_.erase(name);
        changed_.notify_all();
        rc::log::error("models", "fit_failed", {{"model", name}, {"error", plan.err().message}});
        record_load_failure(catalog_, entry, plan.err(), {});
        return plan.err();
    }
    auto eo = engine_opts_;
    auto lo = load_opts_;
    if (plan->fitted) {
        if (plan->cells < plan->cells_wanted) eo.n_ctx_fitted_from = plan->cells_wanted;
        eo.n_ctx = plan->cells;
        lo.n_gpu_layers = plan->layers >= plan->layers_total ? -1 : plan->layers;
    }
    eo.flash_attn = flash_attn_for(eo, plan.value());
    eo.kv.model = name;  // its blocks' source in the KV event log
    // The budget is system memory: a model fitted to a GPU counts what stays off the device; one
    // fitted to --device-memory on the host counts all of llama.cpp's measure.
    const uint64_t need = !plan->fitted ? estimate_memory(entry, eo).total() : plan->gpu ? plan->host_bytes : plan->device_bytes + plan->host_bytes;
    loading_[name].device = plan->device_bytes;
    if (auto room = make_room(lock, need, name); !room) {
        loading_.erase(name);
        changed_.notify_all();
        return room.err();
    }
    loading_[name].memory = need;
    lock.unlock();
    if (plan->fitted) log_fit(name, plan.value());

    auto started = steady::now();
    lo.chat_template = entry.template_text.value_or("");
    std::unique_ptr<engine::engine> eng;
    error failure;
    if (auto m = llama::model::load(entry.part_strings(), lo); !m) {
        failure = m.err();
    } else if (auto e = engine::engine::start(m.value(), eo); !e) {
        failure = e.err();
    } else {
        eng = std::move(e.value());
    }

    lock.lock();
    loading_.erase(name);
    changed_.notify_all();
    if (!eng) {
        rc::log::error("models", "load_failed", {{"model", name}, {"error", failure.message}});
        record_load_failure(catalog_, entry, failure, plan.value());
        return failure;
    }
    auto s = std::make_shared<slot>();
    s->name = name;
    s->engine = std::move(eng);
    s->loaded_at = std::chrono::system_clock::now();
    s->idle_since = steady::now();
    s->keep_alive = opts_.default_keep_alive;
    s->memory = need;
    s->device = plan.value();
    s->leases = 1;
    loaded_[name] = s;
    double ms = std::chrono::duration<double, std::milli>(steady::now() - started).count();
    rc::log::info("models", "loaded", {{"model", name}, {"ms", ms}, {"memory_estimate", need}});
    model_lease lease(this, std::move(s));
    lock.unlock();
    if (recent_) recent_->note_use(name);
    return lease;
}

std::optional<model_lease> model_manager::peek(const std::string & name) {
    std::lock_guard lock(mutex_);
    auto it = loaded_.find(name);
    if (stopping_ || it == loaded_.end()) return std::nullopt;
    ++it->second->leases;
    return model_lease(this, it->second, true);
}

void model_manager::release(slot & s, bool observer) {
    {
        std::lock_guard lock(mutex_);
        assert(s.leases > 0);
        // Idle time runs from the last real use; an observer's hold (peek) is none.
        if (!observer) s.idle_since = steady::now();
        if (--s.leases > 0) return;
        // keep_alive 0: the model goes as soon as nobody uses it (Ollama's "unload after the reply").
        if (!s.retiring && s.keep_alive.count() == 0) {
            rc::log::info("models", "unloading", {{"model", s.name}, {"reason", "keep_alive 0"}});
            retire_locked(s.name);
        }
    }
    reaper_wake_.notify_one();  // a teardown to do, or a new keep-alive deadline
    changed_.notify_all();      // make_room may find an idle model now
}

loaded_model model_manager::view_locked(const slot & s, steady::time_point now) const {
    using sys = std::chrono::system_clock;
    loaded_model v;
    v.name = s.name;
    v.loaded_at = s.loaded_at;
    v.keep_alive = s.keep_alive;
    v.leases = s.leases;
    v.memory = s.memory;
    v.device = s.device;
    v.expires_at = sys::time_point::max();
    if (s.keep_alive != forever) {
        // Busy: keep_alive starts when the last lease ends, so it is a full keep_alive from now.
        auto left = s.leases > 0 ? s.keep_alive : std::chrono::duration_cast<std::chrono::nanoseconds>(idle_deadline(s) - now);
        const auto wall = sys::now();
        if (left < std::chrono::duration_cast<std::chrono::nanoseconds>(sys::time_point::max() - wall))
            v.expires_at = wall + std::chrono::duration_cast<sys::duration>(left);
    }
    return v;
}

std::vector<loaded_model> model_manager::loaded() const {
    std::lock_guard lock(mutex_);
    std::vector<loaded_model> out;
    const auto now = steady::now();
    for (const auto & [name, s] : loaded_) out.push_back(view_locked(*s, now));
    return out;
}

void model_manager::visit_loaded(const std::function<void(const loaded_model &, const engine::engine &)> & f) const {
    std::lock_guard lock(mutex_);
    const auto now = steady::now();
    for (const auto & [name, s] : loaded_) f(view_locked(*s, now), *s->engine);
}

bool model_manager::unload(const std::string & requested) {
    auto entry = catalog_.find(requested);
    const std::string name = entry ? entry->name : requested;
    {
        std::lock_guard lock(mutex_);
        if (!loaded_.count(name)) return false;
        retire_locked(name);
    }
    rc::log::info("models", "unloading", {{"model", name}, {"reason", "requested"}});
    return true;
}

bool model_manager::loading() const {
    std::lock_guard lock(mutex_);
    return !loading_.empty();
}

void model_manager::reaper_loop() {
    lock_t lock(mutex_);
    while (!stopping_) {
        const auto now = steady::now();
        // Idle models past their keep_alive go.
        std::vector<std::string> expired;
        auto next = steady::time_point::max();
        for (const auto & [name, s] : loaded_) {
            if (s->leases > 0) continue;
            auto due = idle_deadline(*s);
            if (due <= now) expired.push_back(name);
            else next = std::min(next, due);
        }
        for (const auto & name : expired) {
            rc::log::info("models", "keep_alive_expired", {{"model", name}});
            retire_locked(name);
        }
        // Retired models nobody holds are torn down here, outside the lock: joining an engine's
        // thread can take a step's time, and no request thread should wait for it.
        std::vector<std::shared_ptr<slot>> victims;
        for (const auto & s : retiring_) {
            if (s->leases == 0 && !s->tearing_down) {
                s->tearing_down = true;
                victims.push_back(s);
            }
        }
        if (!victims.empty()) {
            lock.unlock();
            for (auto & s : victims) {
                s->engine.reset();
                rc::log::info("models", "unloaded", {{"model", s->name}});
                if (recent_) recent_->note_use(s->name);  // its last use: the tier holds what it wrote
                if (opts_.on_unloaded) opts_.on_unloaded(s->name);
            }
            lock.lock();
            // Its memory stops counting only now that it is really gone.
            std::erase_if(retiring_, [](const auto & s) { return s->tearing_down && !s->engine; });
            changed_.notify_all();
            continue;
        }
        if (next == steady::time_point::max()) reaper_wake_.wait(lock);
        else reaper_wake_.wait_until(lock, next);
    }
}

}  // namespace rc::models
