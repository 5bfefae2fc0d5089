#pragma once
// What one HTTP request's generation looks like from its HTTP thread, recorded into server_metrics:
// time to first token, inter-token latency, tokens and finish reasons. generation_session feeds it
// every engine event it receives.
#include <chrono>
#include <string>

#include "api/server_metrics.h"
#include "engine/request.h"

namespace rc::api {

// One per request, shared by its choices (n > 1); used by one thread at a time.
class generation_meter {
  public:
    using clock = std::chrono::steady_clock;

    // Starts the clock: create it right before submitting. `m` null: records nothing. `model` is the
    // label value: the catalog's name, so "demo", "demo.gguf" and "demo:latest" count as one.
    generation_meter(server_metrics * m, const std::string & model);

    // Every event of the request's choices, in the order the HTTP thread receives them. Latency is
    // measured on one choice (`timed`: the first), whose tokens arrive one per engine step; the
    // others' interleave with it and would show as zero gaps. Tokens and finishes count for all.
    void on_event(const engine::generation_event & ev, clock::time_point now = clock::now(), bool timed = true);

  private:
    void observe_ttft(clock::time_point now);

    server_metrics * m_ = nullptr;
    std::string model_;
    clock::time_point submitted_;
    clock::time_point last_token_{};
    bool first_token_seen_ = false;
    // Once the timed choice ends, what still arrives (a terminal event's tail) says nothing about latency.
    bool timing_done_ = false;
    metrics::histogram * ttft_ = nullptr;
    metrics::histogram * itl_ = nullptr;
};

}  // namespace rc::api
