#pragma once
// The host record an agent publishes at <prefix>hosts/<id> (schema 1, JSON). Readers (fleet status,
// the gateway, the console) must ignore fields they do not know and treat missing ones as unknown;
// writers add fields, never change the meaning of one (a change of meaning bumps `schema`).
//
//   {"schema":1, "id":"gpu-a", "agent":{"pid":..,"version":"0.1.0","started_at":"..."},
//    "addresses":{"openai":"http://10.0.0.5:8080","ollama":"http://10.0.0.5:11434"},
//    "version":"0.1.0", "llama_commit":"...", "backend":"cuda", "build_info":"rustycage 0.1.0 (llama.cpp ...)",
//    "devices":[{"name":"CUDA0","description":"...","type":"gpu","memory_total":N,"memory_free":N}],
//    "memory":{"total":N,"available":N},
//    "server":{"state":"ready","ready":true,"pid":N,"restarts":0,"since":"...","last_exit":""},
//    "models":[{"name":"demo","digest":"sha256-...","status":"ready","loaded":true,"size":N}],
//    "kv":{"context_cells_used":N,"context_cells_total":N,"host_bytes":N,"host_budget":N,"disk_bytes":N,
//          "disk_budget":N,"prompt_tokens":{"computed":N,"context":N,"host":N,"disk":N},"hit_rate":0.42},
//    "load":{"running":1,"queued":0},
//    "triage":{"candidate":true}, "updated_at":"..."}
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace rc::fleet {

inline constexpr int host_record_schema = 1;

struct device_fact {
    std::string name, description, type;  // type: cpu | gpu | igpu | accel
    uint64_t memory_total = 0, memory_free = 0;
};

struct model_fact {
    std::string name, digest;
    std::string status = "ready";  // ready | quarantined | failed
    bool loaded = false;
    uint64_t size = 0;
};

struct kv_facts {
    uint64_t context_cells_used = 0, context_cells_total = 0;
    uint64_t host_bytes = 0, host_budget = 0, disk_bytes = 0, disk_budget = 0;
    uint64_t tokens_computed = 0, tokens_context = 0, tokens_host = 0, tokens_disk = 0;
    // Share of prompt tokens whose KV was reused from any tier (0 when nothing ran yet).
    double hit_rate() const;
};

// How busy the server was at its last probe (rustycage_running_sequences and rustycage_queue_depth
// summed over its loaded models). A router's fallback when it cannot ask the server itself.
struct load_facts {
    bool known = false;  // false: the record predates the field, or the probe did not reach /metrics
    uint64_t running = 0, queued = 0;
};

// What the supervisor knows of its child: starting → ready ⇄ unready; exited → backoff → starting;
// crash_loop while it keeps failing before ever being ready; stopped once the agent drains it.
struct server_facts {
    std::string state = "starting";
    bool ready = false;
    int pid = 0;
    int restarts = 0;
    std::string since;      // RFC 3339: when `state` began
    std::string last_exit;  // "exit status 1", "signal 11 (Segmentation fault)", or ""
};

struct host_record {
    int schema = host_record_schema;
    std::string id;
    int agent_pid = 0;
    std::string agent_version, agent_started_at;
    std::string openai_url, ollama_url;
    std::string version, llama_commit, backend, build_info;
    std::vector<device_fact> devices;
    uint64_t memory_total = 0, memory_available = 0;
    server_facts server;
    std::vector<model_fact> models;
    kv_facts kv;
    load_facts load;
    bool triage_candidate = false;
    std::string updated_at;
};

nlohmann::ordered_json to_json(const host_record & r);
// Errors: invalid_argument when the text is not a JSON object with a string "id".
result<host_record> parse_host_record(const std::string & text);
// Why the entry hosts/<key_id> is not an agent's registration, "" when it is. An agent registers
// under its own id, on its lease, and etcd lets only the user <key_id> write that key
// (scripts/fleet-etcd-setup.sh): a record not on a lease, or naming another host, was put there by
// someone else. Peers never probe it, the gateway never routes to it, a rollout never plans it.
std::string registration_problem(const std::string & key_id, int64_t lease, const result<host_record> & parsed);

}  // namespace rc::fleet
