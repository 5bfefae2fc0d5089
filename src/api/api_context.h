#pragma once
// What every route handler may use: the model manager, the server's API settings, its metrics and
// the facts read from model files. One per server, shared by both listeners.
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api/model_facts.h"
#include "api/server_metrics.h"
#include "models/model_manager.h"

namespace rc::api {

struct api_options {
    int max_tokens_cap = 32768;         // upper bound for max_tokens / num_predict
    int default_max_tokens = -1;        // when a request names none (-1: until stop or context end)
    std::vector<std::string> api_keys;  // empty: no auth
    std::string version = "0.1.0";
    std::string llama_commit;           // the pinned llama.cpp commit (/v1/metadata, /props, build_info)
    int n_parallel = 4;                 // sequences per model, as the engines were started (/props total_slots)
};

// What the server still does before it is ready (serve --preload): while `pending()` is not empty,
// /v1/health/ready and /health answer 503 with it. Any thread.
class startup_gate {
  public:
    void set(std::string what) {
        std::lock_guard lock(mutex_);
        what_ = std::move(what);
    }
    void clear() { set({}); }
    std::string pending() const {
        std::lock_guard lock(mutex_);
        return what_;
    }

  private:
    mutable std::mutex mutex_;
    std::string what_;
};

struct api_context {
    models::model_manager & models;
    api_options opts;
    std::chrono::system_clock::time_point started = std::chrono::system_clock::now();
    // Never null. Shared so the context stays copyable; api_server wires its collectors.
    std::shared_ptr<server_metrics> metrics = std::make_shared<server_metrics>();
    // GGUF header facts per model file (/api/tags, /api/show, /api/ps), read once per file version.
    std::shared_ptr<model_facts_cache> facts = std::make_shared<model_facts_cache>();
    // Set when a shutdown's grace period is over: every generation still running ends at its next
    // client check with a 503 error (a stream: its error event, then its end), not a cut connection.
    std::shared_ptr<std::atomic<bool>> ending = std::make_shared<std::atomic<bool>>(false);
    // Set when the server starts to stop: streams that never end by themselves (KV events) end.
    std::shared_ptr<std::atomic<bool>> stopping = std::make_shared<std::atomic<bool>>(false);
    std::shared_ptr<startup_gate> startup = std::make_shared<startup_gate>();
    // The KV event streams open now, on every port together (the cap is the server's, not a port's).
    std::shared_ptr<std::atomic<int>> kv_event_readers = std::make_shared<std::atomic<int>>(0);
};

}  // namespace rc::api
