#pragma once
// The server's Prometheus metrics, served at /metrics and /v1/metrics. The names are a contract
// (dashboards and tests rely on them):
//
//   rustycage_requests_total{route,method,status}     counter   every HTTP request; `route` is the
//                                                                matched pattern ("/v1/models/:id") or
//                                                                "unmatched", never the raw path
//   rustycage_request_duration_seconds{route}        histogram arrival → response ready (a stream: → its end)
//   rustycage_time_to_first_token_seconds{model}     histogram submit → first token seen by the HTTP thread
//   rustycage_inter_token_latency_seconds{model}     histogram gap between successive tokens seen by the HTTP thread
//   rustycage_prompt_tokens_total{model}             counter   prompt tokens of finished requests (as usage reports them, cached included)
//   rustycage_generated_tokens_total{model}          counter   generated tokens of finished requests (usage.completion_tokens)
//   rustycage_requests_finished_total{model,reason}  counter   reason: stop, length, cancelled, error
//   rustycage_queue_depth{model}                     gauge     requests waiting for a sequence  ┐
//   rustycage_running_sequences{model}               gauge     sequences prefilling or decoding  │ read from engine
//   rustycage_kv_cells_used{model}                   gauge     KV cells held by running sequences│ stats at scrape
//   rustycage_kv_cells_capacity{model}               gauge     KV cells of the model's context   │ time; a model's
//   rustycage_models_loaded                          gauge     loaded models                     ┘ series vanish on unload
//   rustycage_build_info{version,llama_commit}       gauge     always 1
//   rustycage_kv_*                                   KV tiers (docs/KV_TIERING.md): prompt tokens by
//                                                    source, block moves and bytes per tier pair,
//                                                    evictions, preemptions, corrupt and missing blocks,
//                                                    promotions and restores and their time, bytes /
//                                                    budget / blocks per tier
//   rustycage_engine_step_*, _prefill_*              scheduling: step time and tokens, prefill chunks,
//                                                    the per-step prefill budget (docs/KV_TIERING.md)
//
// A "finished request" is one engine request: each choice of n, each prompt of a list, each input
// of an embeddings batch (an embedding counts as `stop`). The capacity gauge is not called
// *_kv_cells_total: Prometheus reserves `_total` for counters and promtool rejects a gauge named so.
//
// Why the per-model counters are counted from events and not read from engine_stats: an engine's
// counters die with it, so a model unload (or an unload + reload) would make a scraped counter drop,
// which Prometheus reads as a restart. Counted here instead (generation_meter in generation_meter.h,
// at the terminal event the session sees), they live as long as the process and never go
// backwards. Every generation and embedding counts here (generation_session and run_embeddings meter
// each request). The gauges are read from the engines at scrape time, so they cannot go stale.
#include <string>

#include "metrics/registry.h"
#include "models/model_manager.h"

namespace rc::api {

class server_metrics {
  public:
    server_metrics();
    server_metrics(const server_metrics &) = delete;
    server_metrics & operator=(const server_metrics &) = delete;

    // Adds the engine-stat gauges over `models`' loaded models (at most once per registry; the
    // manager must outlive this object).
    void collect_models(const models::model_manager & models);
    void set_build_info(const std::string & version, const std::string & llama_commit);

    // One HTTP request (route: the matched pattern, empty when none matched).
    void record_request(const std::string & route, const std::string & method, int status, double seconds);

    std::string expose() const { return registry.expose(); }

    metrics::registry registry;
    metrics::counter_family & requests;
    metrics::histogram_family & request_duration;
    metrics::histogram_family & time_to_first_token;
    metrics::histogram_family & inter_token_latency;
    metrics::counter_family & prompt_tokens;
    metrics::counter_family & generated_tokens;
    metrics::counter_family & requests_finished;
    metrics::gauge_family & build_info;

  private:
    void collect_kv_tiers(const models::model_manager & models);
    void collect_device_memory(const models::model_manager & models);
    bool collecting_ = false;
};

}  // namespace rc::api
