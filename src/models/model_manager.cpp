#include "models/model_manager.h"

#include "util/log.h"

namespace rc::models {

model_manager::model_manager(local_catalog catalog, engine::engine_options engine_opts, llama::model_load_options load_opts)
    : catalog_(std::move(catalog)), engine_opts_(engine_opts), load_opts_(load_opts) {}

model_manager::~model_manager() {
    std::lock_guard lock(mutex_);
    loaded_.clear();
}

result<std::shared_ptr<engine::engine>> model_manager::acquire(const std::string & requested) {
    auto entry = catalog_.find(requested);
    if (!entry) return entry.err();
    const std::string name = entry->name;

    std::unique_lock lock(mutex_);
    for (;;) {
        if (auto it = loaded_.find(name); it != loaded_.end()) {
            it->second.last_used = std::chrono::system_clock::now();
            return it->second.engine;
        }
        if (!loading_.count(name)) break;
        load_done_.wait(lock);  // another request is loading it; its result serves us too
    }
    loading_[name] = 1;
    lock.unlock();

    auto started = std::chrono::steady_clock::now();
    result<std::shared_ptr<engine::engine>> out = make_error(errc::internal, "not loaded");
    auto m = llama::model::load(entry->path.string(), load_opts_);
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
        auto now = std::chrono::system_clock::now();
        loaded_[name] = loaded_model{name, out.value(), now, now};
        double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
        rc::log::info("models", "loaded", {{"model", name}, {"ms", ms}});
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
    auto entry = catalog_.find(requested);
    std::string name = entry ? entry->name : requested;
    std::shared_ptr<engine::engine> victim;
    {
        std::lock_guard lock(mutex_);
        auto it = loaded_.find(name);
        if (it == loaded_.end()) return false;
        victim = std::move(it->second.engine);
        loaded_.erase(it);
    }
    rc::log::info("models", "unloaded", {{"model", name}});
    return true;  // the engine stops when its last in-flight user lets go
}

bool model_manager::set_keep_alive(const std::string & requested, std::chrono::nanoseconds keep_alive) {
    auto entry = catalog_.find(requested);
    std::lock_guard lock(mutex_);
    auto it = loaded_.find(entry ? entry->name : requested);
    if (it == loaded_.end()) return false;
    it->second.keep_alive = keep_alive;
    return true;
}

bool model_manager::loading() const {
    std::lock_guard lock(mutex_);
    return !loading_.empty();
}

}  // namespace rc::models
