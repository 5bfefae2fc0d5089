#include "serve_preload.h"

#include <algorithm>
#include <iostream>

#include "models/memory_estimate.h"
#include "models/recent_models.h"
#include "util/log.h"

namespace rc::cli {

result<std::vector<preload_item>> plan_preloads(const std::vector<std::string> & flags, const models::model_manager & manager) {
    std::vector<preload_item> out;
    auto listed = [&](const std::string & name) {
        return std::any_of(out.begin(), out.end(), [&](const preload_item & i) { return i.name == name; });
    };
    bool want_auto = false;
    for (const auto & name : flags) {
        if (name == "auto") {
            want_auto = true;
            continue;
        }
        auto e = manager.catalog().find(name);
        if (!e) return make_error(e.err().code, "cannot preload '" + name + "': " + e.err().message);
        if (!listed(e->name)) out.push_back({e->name, true});
    }
    if (!want_auto) return out;
    const auto & disk_dir = manager.engine_options().kv.disk_dir;
    if (disk_dir.empty()) {
        rc::log::info("serve", "preload_auto_skipped", {{"reason", "no KV disk tier (--kv-disk-dir)"}});
        return out;
    }
    for (const auto & name : models::recent_models(models::recent_models::file_in(disk_dir)).newest_first()) {
        auto e = manager.catalog().find(name);
        if (!e || !e->servable()) continue;  // removed, or not servable any more since
        if (!listed(e->name)) out.push_back({e->name, false});
    }
    return out;
}

preloader::preloader(models::model_manager & manager, std::vector<preload_item> items, api::startup_gate & gate, std::function<void()> on_fatal)
    : manager_(manager), items_(std::move(items)), gate_(gate), on_fatal_(std::move(on_fatal)) {
    if (items_.empty()) return;
    gate_.set("loading " + std::to_string(items_.size()) + " preloaded model(s)");
    thread_ = std::thread([this] { run(); });
}

preloader::~preloader() {
    stopping_ = true;
    if (thread_.joinable()) thread_.join();
}

void preloader::run() {
    const uint64_t budget = manager_.options().memory_budget;
    for (size_t i = 0; i < items_.size() && !stopping_; ++i) {
        const auto & item = items_[i];
        if (!item.named && budget > 0) {
            // `auto` never makes room: it fills what the budget has left, newest conversations first.
            auto e = manager_.catalog().find(item.name);
            const uint64_t need = e ? models::estimate_memory(e.value(), manager_.engine_options()).total() : 0;
            if (!e || manager_.memory_in_use() + need > budget) {
                rc::log::info("serve", "preload_skipped", {{"model", item.name}, {"reason", e ? "the memory budget is taken" : e.err().message}});
                continue;
            }
        }
        gate_.set("loading model '" + item.name + "' (" + std::to_string(i + 1) + " of " + std::to_string(items_.size()) + ")");
        auto lease = manager_.acquire(item.name);  // released at once: the model stays for its keep_alive
        if (lease) {
            rc::log::info("serve", "preloaded", {{"model", item.name}, {"auto", !item.named}});
            continue;
        }
        rc::log::error("serve", "preload_failed", {{"model", item.name}, {"error", lease.err().message}});
        if (item.named) {
            std::cerr << "error: cannot preload '" << item.name << "': " << lease.err().message << std::endl;
            on_fatal_();
            return;
        }
    }
    gate_.clear();
}

}  // namespace rc::cli
