#include "gateway/gateway_metrics.h"

#include <map>

namespace rc::gateway {

namespace {

const std::string & method_label(const std::string & method) {
    static const std::vector<std::string> known = {"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"};
    static const std::string other = "other";
    for (const auto & m : known)
        if (m == method) return m;
    return other;
}

std::vector<double> lookup_buckets() { return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}; }
// Routing is meant to cost well under a millisecond: buckets from 25 µs.
std::vector<double> routing_buckets() { return {0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1}; }

}  // namespace

// Registration of these fixed, valid names cannot fail; value() asserts it.
gateway_metrics::gateway_metrics()
    : requests_(*registry.add_counter("rustycage_gateway_http_requests_total", "Client requests by route pattern, method and status.",
                                      {"route", "method", "status"}).value()),
      duration_(*registry.add_histogram("rustycage_gateway_http_request_duration_seconds",
                                        "Client request duration from arrival until the response is ready (a stream: until it ends).", {"route"},
                                        metrics::default_latency_buckets()).value()),
      routed_(*registry.add_counter("rustycage_gateway_routed_total", "Requests sent to a host, by why it was chosen.", {"host", "reason"}).value()),
      failures_(*registry.add_counter("rustycage_gateway_upstream_failures_total", "Forwarded requests a host failed, by when.", {"host", "stage"})
                     .value()),
      lookups_(*registry.add_counter("rustycage_gateway_lookups_total", "KV lookups sent to hosts, by outcome.", {"host", "outcome"}).value()),
      lookup_seconds_(*registry.add_histogram("rustycage_gateway_lookup_seconds", "Time one request's KV lookups took, start to decision.", {},
                                              lookup_buckets()).value()),
      route_seconds_(*registry.add_histogram("rustycage_gateway_route_seconds",
                                             "Time the cache policy took to gather one request's routing inputs (render, tokenize, key chain, index walk, lookups), by where they came from.",
                                             {"inputs"}, routing_buckets()).value()),
      forward_seconds_(*registry.add_histogram("rustycage_gateway_forward_seconds",
                                               "Time from a proxied request's arrival to its first host call starting (parse, routing, planning).", {},
                                               routing_buckets()).value()),
      cached_(*registry.add_counter("rustycage_gateway_cached_tokens_total", "Prompt tokens the chosen host reported cached, by tier.",
                                    {"host", "tier"}).value()),
      hosts_(*registry.add_collected("rustycage_gateway_hosts", "Hosts the gateway knows, by state.", metrics::metric_type::gauge, {"state"})
                  .value()),
      inflight_(*registry.add_collected("rustycage_gateway_inflight", "Requests in flight to each host.", metrics::metric_type::gauge, {"host"})
                     .value()),
      render_memo_(*registry.add_collected("rustycage_gateway_render_memo_total",
                                           "Prompt renders of the gateway's vocabularies by outcome (hit: spliced from a kept shape).",
                                           metrics::metric_type::counter, {"outcome"})
                        .value()),
      build_info_(*registry.add_gauge("rustycage_build_info", "Build information; always 1.", {"version", "llama_commit"}).value()) {}

void gateway_metrics::collect_hosts(const host_table & hosts) {
    registry.add_collector([this, &hosts](metrics::scrape_sink & s) {
        std::map<std::string, int> by_state = {{"up", 0}, {"degraded", 0}, {"unreachable", 0}, {"down", 0}};
        for (const auto & h : hosts.hosts()) {
            ++by_state[h.state];
            s.add(inflight_, {h.id}, h.inflight);
        }
        for (const auto & [state, n] : by_state) s.add(hosts_, {state}, n);
    });
}

void gateway_metrics::collect_vocabs(const model_vocabs & vocabs) {
    registry.add_collector([this, &vocabs](metrics::scrape_sink & s) {
        std::map<std::string, double> n = {{"hit", 0}, {"miss", 0}, {"bypassed", 0}, {"checked", 0}, {"mismatch", 0}};
        const auto all = vocabs.to_json();
        for (const auto & [model, v] : all.items()) {
            if (!v.contains("render_memo")) continue;
            const auto & m = v["render_memo"];
            n["hit"] += m.value("hits", 0.0);
            n["miss"] += m.value("misses", 0.0);
            n["bypassed"] += m.value("bypassed", 0.0);
            n["checked"] += m.value("checked", 0.0);
            n["mismatch"] += m.value("mismatches", 0.0);
        }
        for (const auto & [outcome, count] : n) s.add(render_memo_, {outcome}, count);
    });
}

void gateway_metrics::set_build_info(const std::string & version, const std::string & llama_commit) { build_info_.with({version, llama_commit}).set(1); }

void gateway_metrics::record_request(const std::string & route, const std::string & method, int status, double seconds) {
    const std::string r = route.empty() ? std::string("unmatched") : route;
    requests_.with({r, method_label(method), std::to_string(status)}).inc();
    duration_.with({r}).observe(seconds);
}

void gateway_metrics::routed(const std::string & host, const std::string & reason) { routed_.with({host, reason}).inc(); }

void gateway_metrics::upstream_failure(const std::string & host, const std::string & stage) { failures_.with({host, stage}).inc(); }

void gateway_metrics::lookup(const std::string & host, bool answered) { lookups_.with({host, answered ? "answered" : "failed"}).inc(); }

void gateway_metrics::lookup_time(double seconds) { lookup_seconds_.with({}).observe(seconds); }
void gateway_metrics::route_time(const std::string & inputs, double seconds) { route_seconds_.with({inputs}).observe(seconds); }
void gateway_metrics::forward_time(double seconds) { forward_seconds_.with({}).observe(seconds); }

void gateway_metrics::cached_tokens(const std::string & host, const kv_answer & a) {
    if (a.context > 0) cached_.with({host, "context"}).inc(a.context);
    if (a.host > 0) cached_.with({host, "host"}).inc(a.host);
    if (a.disk > 0) cached_.with({host, "disk"}).inc(a.disk);
}

}  // namespace rc::gateway
