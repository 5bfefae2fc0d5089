#pragma once
// Drives one submitted request from an HTTP thread: hands each engine event to `on_event` until the
// terminal one, and cancels the request when the client disappears or `on_event` returns false.
// With a generation_meter it also records the request's latency and token metrics.
#include <chrono>
#include <functional>
#include <string>

#include "api/api_context.h"
#include "api/server_metrics.h"
#include "engine/request_channel.h"

namespace rc::api {

// What one HTTP request's generation looks like from its HTTP thread: time to first token,
// inter-token latency, tokens and the finish reason, recorded into `server_metrics` as the pump
// sees events. One per request, shared by the pumps of its choices (n > 1); used by one thread at a
// time.
class generation_meter {
  public:
    using clock = std::chrono::steady_clock;

    // Starts the clock: create it right before submitting. `m` null: records nothing. `model` is the
    // label value: the catalog's name, so "demo", "demo.gguf" and "demo:latest" count as one.
    generation_meter(server_metrics * m, const std::string & model);
    // The same for `requested` as a client spelled it (resolved through the catalog).
    generation_meter(api_context & ctx, const std::string & requested);

    // Every event a pump receives, in order (pump() calls it).
    void on_event(const engine::generation_event & ev, clock::time_point now = clock::now());

  private:
    void observe_ttft(clock::time_point now);

    server_metrics * m_ = nullptr;
    std::string model_;
    clock::time_point submitted_;
    clock::time_point last_token_{};
    bool first_token_seen_ = false;
    // After the first choice ends, the other choices of the request (generated concurrently, their
    // events waiting in their channels) arrive in bursts that say nothing about latency.
    bool timing_done_ = false;
    metrics::histogram * ttft_ = nullptr;
    metrics::histogram * itl_ = nullptr;
};

// Returns the terminal event (done, error or embedding). Records no metrics.
engine::generation_event pump(engine::request_channel & ch, const std::function<bool()> & client_alive,
                              const std::function<bool(const engine::generation_event &)> & on_event);

// The same, recording every event into `meter` (pass the request's one meter to each choice's pump).
engine::generation_event pump(engine::request_channel & ch, const std::function<bool()> & client_alive,
                              const std::function<bool(const engine::generation_event &)> & on_event, generation_meter & meter);

}  // namespace rc::api
