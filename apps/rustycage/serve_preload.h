#pragma once
// `serve --preload`: models loaded right after the ports are bound, before the server says it is
// ready (/v1/health/ready answers 503 "loading …" until they are in), so the first request after a
// restart pays no load. `--preload auto` adds the models the KV disk tier holds recent conversations
// for (models/recent_models.h), newest use first, as many as the memory budget holds beside the
// others. A model named explicitly must load (else the server stops, status 1); an `auto` one that
// is gone or does not fit is skipped with a log line.
#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "api/api_context.h"
#include "models/model_manager.h"
#include "util/result.h"

namespace rc::cli {

struct preload_item {
    std::string name;
    bool named = true;  // given by name (must load) rather than found by `auto`
};

// The models to load, in order, "auto" expanded. Errors: the catalog's, for a named model that is
// not there (so a typo stops the server before it listens).
result<std::vector<preload_item>> plan_preloads(const std::vector<std::string> & flags, const models::model_manager & manager);

// Loads `items` on a thread of its own, showing progress in `gate` and clearing it at the end.
// `on_fatal` runs (on that thread) when a named model fails to load. stop() makes it skip what has
// not started loading; the destructor joins.
class preloader {
  public:
    preloader(models::model_manager & manager, std::vector<preload_item> items, api::startup_gate & gate, std::function<void()> on_fatal);
    ~preloader();
    void stop() { stopping_ = true; }

  private:
    void run();

    models::model_manager & manager_;
    std::vector<preload_item> items_;
    api::startup_gate & gate_;
    std::function<void()> on_fatal_;
    std::atomic<bool> stopping_{false};
    std::thread thread_;
};

}  // namespace rc::cli
