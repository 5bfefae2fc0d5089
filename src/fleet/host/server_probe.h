#pragma once
// Learns what the host's server is doing through its public HTTP routes only (the server never
// needs etcd, nor the agent the server's internals): /v1/health/ready, /v1/metadata, /api/tags,
// /api/ps and /metrics. Also the probe agents send to their peers.
//
// Contract: every call is bounded by the timeout given; an unreachable or hung server is a value
// (reachable == false / ready == false with the reason), never an error. Any thread.
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "fleet/host/host_record.h"

namespace rc::fleet {

struct ready_probe {
    bool reachable = false;  // it answered HTTP at all
    bool ready = false;      // 200 from /v1/health/ready
    std::string error;       // why not, for people
};

ready_probe probe_ready(const std::string & base_url, std::chrono::milliseconds timeout);

struct server_snapshot {
    ready_probe health;
    std::string version, llama_commit, build_info;
    std::vector<model_fact> models;  // servable (from /api/tags), loaded flags from /api/ps
    kv_facts kv;
    load_facts load;                             // from /metrics (known when it answered)
    uint64_t corrupt_blocks = 0;                 // rustycage_kv_corrupt_blocks_total, summed
    uint64_t responses_5xx = 0;                  // rustycage_requests_total with a 5xx status, summed
    std::map<std::string, uint64_t> routes_5xx;  // the same by route
};

// `api_key`: the server's bearer key when it requires one (health and metrics are public anyway).
server_snapshot probe_server(const std::string & base_url, std::chrono::milliseconds timeout, const std::string & api_key = "");

// One sample of Prometheus text: name, labels, value.
struct prom_sample {
    std::string name;
    std::map<std::string, std::string> labels;
    double value = 0;
};
std::vector<prom_sample> parse_prometheus_text(const std::string & text);

}  // namespace rc::fleet
