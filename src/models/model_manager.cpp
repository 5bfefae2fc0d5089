#include "models/model_manager.h"

#include "util/byte_size.h"
#include "util/log.h"

namespace rc::models {

using sys_clock = std::chrono::system_clock;

namespace {

bool idle(const loaded_model & lm) { return lm.engine.use_count() == 1; }

bool expired(const loaded_model & lm, sys_clock::time_point now) {
    if (lm.keep_alive == std::chrono::nanoseconds::max()) return false;
    return now - lm.last_used >= std::chrono::duration_cast<sys_clock::duration>(lm.keep_alive);
}

}  // namespace

model_manager::model_manager(local_catalog catalog, engine::engine_options engine_opts, llama::model_load_options load_opts, manager_options opts)
    : catalog_(std::move(catalog)), engine_opts_(engine_opts), load_opts_(load_opts), opts_(opts) {
    reaper_ = std::thread([this] {
        std::unique_lock lock(mutex_);
        while (!stopping_) {
            reaper_wake_.wait_for(lock, std::chrono::seconds(1));
            if (stopping_) break;
            lock.unlock();
            reap_expired();
            lock.lock();
        }
    });
}

model_manager::~model_manager() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    reaper_wake_.notify_all();
    reaper_.join();
    std::lock_guard lock(mutex_);
    loaded_.clear();
}

std::string model_manager::key_of(const std::string & requested) const {
    auto entry = catalog_.find(requested);
    return entry ? entry->name : requested;
}

uint64_t model_manager::memory_in_use() const {
    std::lock_guard lock(mutex_);
    uint64_t sum = 0;
    for (const auto & [n, lm] : loaded_) sum += lm.memory;
    for (const auto & [n, bytes] : loading_) sum += bytes;
    return sum;
}

status model_manager::make_room(std::unique_lock<std::mutex> & lock, uint64_t need, const std::string & for_name) {
    if (opts_.memory_budget == 0) return {};
    if (need > opts_.memory_budget)
        return make_error(errc::invalid_argument, "model '" + for_name + "' needs about " + format_byte_size(need) + ", more than the whole memory budget of " +
                                                      format_byte_size(opts_.memory_budget) + " (--memory-budget)");
    const auto deadline = std::chrono::steady_clock::now() + opts_.busy_wait;
    for (;;) {
        uint64_t used = 0;
        for (const auto & [n, lm] : loaded_) used += lm.memory;
        for (const auto & [n, bytes] : loading_) used += bytes;
        if (used + need <= opts_.memory_budget) return {};
        auto victim = loaded_.end();
        for (auto it = loaded_.begin(); it != loaded_.end(); ++it)
            if (idle(it->second) && (victim == loaded_.end() || it->second.last_used < victim->second.last_used)) victim = it;
        if (victim != loaded_.end()) {
            rc::log::info("models", "unloading_for_room", {{"model", victim->first}, {"for", for_name}, {"freed", victim->second.memory}});
            auto engine = std::move(victim->second.engine);
            loaded_.erase(victim);
            lock.unlock();
            engine.reset();  // stops its thread and frees its context outside the lock
            lock.lock();
            continue;
        }
        if (std::chrono::steady_clock::now() >= deadline)
            return make_error(errc::unavailable, "the memory budget (" + format_byte_size(opts_.memory_budget) + ") is held by busy models; '" + for_name +
                                                     "' cannot be loaded now, retry later");
        // Busy models become idle when their requests let go of the engine; nothing signals that,
        // so look again shortly.
        load_done_.wait_for(lock, std::chrono::milliseconds(100));
    }
}

result<std::shared_ptr<engine::engine>> model_manager::acquire(const std::string & requested) {
    auto entry = catalog_.find(requested);
    if (!entry) return entry.err();
    if (!entry->servable()) {
        std::string why = entry->status == "failed" ? "failed its quarantine check: " + entry->status_reason : "is quarantined until its check passes";
        return make_error(errc::invalid_argument, "model '" + entry->name + "' " + why);
    }
    const std::string name = entry->name;

    std::unique_lock lock(mutex_);
    for (;;) {
        if (auto it = loaded_.find(name); it != loaded_.end()) {
            it->second.last_used = sys_clock::now();
            return it->second.engine;
        }
        if (!loading_.count(name)) break;
        load_done_.wait(lock);  // another request is loading it; its result serves us too
    }
    const uint64_t need = estimate_memory(*entry, engine_opts_).total();
    loading_[name] = 0;  // claims the load before make_room may release the lock
    if (auto room = make_room(lock, need, name); !room) {
        loading_.erase(name);
        load_done_.notify_all();
        return room.err();
    }
    loading_[name] = need;
    lock.unlock();

    auto started = std::chrono::steady_clock::now();
    result<std::shared_ptr<engine::engine>> out = make_error(errc::internal, "not loaded");
    auto lo = load_opts_;
    lo.chat_template = entry->template_text.value_or("");
    auto m = llama::model::load(entry->part_strings(), lo);
    if (!m) {
        out = m.err();
    } else {
        auto e = engine::engine::start(m.value(), engine_opts_);
        if (!e) out = e.err();
        else out = std::shared_ptr<engine::engine>(std::move(e.value()));
    }

    lock.lock();
    loading_.erase(name);
    if (out) {
        auto now = sys_clock::now();
        loaded_[name] = loaded_model{name, out.value(), now, now, opts_.default_keep_alive, need};
        double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
        rc::log::info("models", "loaded", {{"model", name}, {"ms", ms}, {"memory_estimate", need}});
    } else {
        rc::log::error("models", "load_failed", {{"model", name}, {"error", out.err().message}});
    }
    load_done_.notify_all();
    return out;
}

std::vector<loaded_model> model_manager::loaded() const {
    std::lock_guard lock(mutex_);
    std::vector<loaded_model> out;
    for (const auto & [name, lm] : loaded_) out.push_back(lm);
    return out;
}

bool model_manager::unload(const std::string & requested) {
    const std::string name = key_of(requested);
    std::shared_ptr<engine::engine> victim;
    {
        std::lock_guard lock(mutex_);
        auto it = loaded_.find(name);
        if (it == loaded_.end()) return false;
        victim = std::move(it->second.engine);
        loaded_.erase(it);
    }
    load_done_.notify_all();
    rc::log::info("models", "unloaded", {{"model", name}});
    return true;  // the engine stops when its last in-flight user lets go
}

bool model_manager::set_keep_alive(const std::string & requested, std::chrono::nanoseconds keep_alive) {
    const std::string name = key_of(requested);
    std::lock_guard lock(mutex_);
    auto it = loaded_.find(name);
    if (it == loaded_.end()) return false;
    it->second.keep_alive = keep_alive;
    return true;
}

bool model_manager::loading() const {
    std::lock_guard lock(mutex_);
    return !loading_.empty();
}

void model_manager::reap_expired() {
    std::vector<std::shared_ptr<engine::engine>> victims;
    {
        std::lock_guard lock(mutex_);
        const auto now = sys_clock::now();
        for (auto it = loaded_.begin(); it != loaded_.end();) {
            if (!idle(it->second)) {
                it->second.last_used = now;  // in use: its keep_alive counts from when it goes idle
                ++it;
            } else if (expired(it->second, now)) {
                rc::log::info("models", "keep_alive_expired", {{"model", it->first}});
                victims.push_back(std::move(it->second.engine));
                it = loaded_.erase(it);
            } else {
                ++it;
            }
        }
    }
    if (!victims.empty()) load_done_.notify_all();
}

}  // namespace rc::models
