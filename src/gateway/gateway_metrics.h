#pragma once
// The gateway's Prometheus metrics, served at its /metrics and /v1/metrics. The names are a
// contract (dashboards and tests rely on them):
//
//   rustycage_gateway_http_requests_total{route,method,status}  counter   every client request (route: the matched pattern)
//   rustycage_gateway_http_request_duration_seconds{route}      histogram arrival → response ready (a stream: → its end)
//   rustycage_gateway_routed_total{host,reason}                 counter   attempts sent to a host, by why it was chosen:
//                                                                          cache_context | cache_host | cache_disk | affinity |
//                                                                          load | round_robin | only | failover
//   rustycage_gateway_upstream_failures_total{host,stage}       counter   stage: before_first_byte (retried elsewhere) |
//                                                                          mid_stream (the client got an error frame) |
//                                                                          error_status (a 5xx answer, retried elsewhere)
//   rustycage_gateway_lookups_total{host,outcome}               counter   outcome: answered | failed (incl. timeouts)
//   rustycage_gateway_lookup_seconds                            histogram one request's lookup fan-out, start → decision
//   rustycage_gateway_route_seconds{inputs}                     histogram the cache policy's inputs for one request: render, tokenize,
//                                                                          key chain, index walk, and lookups where needed;
//                                                                          inputs: index (no host asked) | lookup | mixed
//   rustycage_gateway_forward_seconds                           histogram a proxied request's arrival → its first host call starting
//   rustycage_gateway_cached_tokens_total{host,tier}            counter   prompt tokens the chosen host reported cached
//   rustycage_gateway_hosts{state}                              gauge     hosts by state (up | degraded | unreachable | down), at scrape
//   rustycage_gateway_inflight{host}                            gauge     requests in flight to each host, at scrape
//   rustycage_gateway_render_memo_total{outcome}                counter   the vocabularies' prompt renders (engine/render_memo.h), at scrape:
//                                                                          hit | miss | bypassed | checked | mismatch
//   rustycage_build_info{version,llama_commit}                  gauge     always 1
//
// Label values are bounded: host ids (the fleet's), fixed reasons and route patterns.
#include <string>

#include "gateway/host_table.h"
#include "gateway/model_vocabs.h"
#include "gateway/route_planner.h"
#include "metrics/registry.h"

namespace rc::gateway {

class gateway_metrics {
  public:
    gateway_metrics();
    gateway_metrics(const gateway_metrics &) = delete;
    gateway_metrics & operator=(const gateway_metrics &) = delete;

    // The gauges over `hosts` (must outlive this object); once.
    void collect_hosts(const host_table & hosts);
    // The render memo counters over `vocabs` (must outlive this object); once.
    void collect_vocabs(const model_vocabs & vocabs);
    void set_build_info(const std::string & version, const std::string & llama_commit);

    void record_request(const std::string & route, const std::string & method, int status, double seconds);
    void routed(const std::string & host, const std::string & reason);
    void upstream_failure(const std::string & host, const std::string & stage);
    void lookup(const std::string & host, bool answered);
    void lookup_time(double seconds);
    void route_time(const std::string & inputs, double seconds);
    void forward_time(double seconds);
    void cached_tokens(const std::string & host, const kv_answer & a);

    std::string expose() const { return registry.expose(); }

    metrics::registry registry;

  private:
    metrics::counter_family & requests_;
    metrics::histogram_family & duration_;
    metrics::counter_family & routed_;
    metrics::counter_family & failures_;
    metrics::counter_family & lookups_;
    metrics::histogram_family & lookup_seconds_;
    metrics::histogram_family & route_seconds_;
    metrics::histogram_family & forward_seconds_;
    metrics::counter_family & cached_;
    metrics::collected_family & hosts_;
    metrics::collected_family & inflight_;
    metrics::collected_family & render_memo_;
    metrics::gauge_family & build_info_;
};

}  // namespace rc::gateway
