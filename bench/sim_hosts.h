#pragma once
// Simulated fleet hosts for the gateway's scale benchmark (bench/gateway_scale.cpp): many hosts
// behind one HTTP listener (host k answers under /sim/k/…), each registered in etcd as an agent
// would (its own record on its own lease), each with a KV tier of synthetic blocks.
//
// A simulated host does a real host's routing work and nothing of its generation:
//   GET  /v1/kv/events  a snapshot of its blocks, then the blocks its requests store, ticks between
//   GET  /v1/kv/vocab   the model's vocabulary (llama/vocab_file.h, from a real model file)
//   POST /v1/kv/lookup  what a host does: the body read and rendered by the hosts' own reader
//                       (api/request_prompt.h), tokenized, its key chain walked against its blocks;
//                       the thread CPU time it takes is summed (the fleet's cost of being asked)
//   POST /v1/chat/completions, /v1/completions  stores the prompt's blocks (events out) and answers
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "fleet/etcd/etcd_client.h"
#include "fleet/etcd/fleet_keys.h"
#include "gateway/model_vocabs.h"
#include "http/http_server.h"

namespace rc::bench {

struct sim_options {
    int hosts = 61;
    size_t blocks = 100000;    // synthetic blocks each host holds at the start
    int block_size = 64;
    std::string model;         // the name every host serves
    std::string model_file;    // a real GGUF: its vocabulary is served and used for lookups
    std::string identity;      // the KV identity digest (hex) every host announces
    std::string id_prefix = "sim-";
};

class sim_hosts {
  public:
    explicit sim_hosts(sim_options opts);
    ~sim_hosts();

    // Loads the vocabulary, binds, serves and registers every host under `keys`. Errors: the first.
    status start(fleet::etcd_client & etcd, const fleet::fleet_keys & keys);
    void stop();

    double lookup_cpu_seconds() const;  // summed over every lookup answered so far
    uint64_t lookups() const { return lookups_.load(); }
    uint64_t completions() const { return completions_.load(); }

  private:
    struct host {
        std::string id;
        std::mutex mu;
        std::condition_variable changed;
        std::unordered_set<uint64_t> blocks;
        std::deque<uint64_t> pending;  // stored since the stream last sent
        uint64_t seq = 0;
    };
    http::http_response events(host & h);
    http::http_response lookup(host & h, const http::http_request & req);
    http::http_response complete(host & h, const http::http_request & req);
    std::vector<uint64_t> chain_of(nlohmann::json body, const std::string & api, int & prompt_tokens) const;

    sim_options opts_;
    std::string vocab_bytes_;
    std::shared_ptr<const gateway::model_vocab> vocab_;
    std::vector<std::unique_ptr<host>> hosts_;
    std::unique_ptr<http::http_server> server_;
    std::thread serving_, keepalive_;
    int port_ = 0;
    std::atomic<bool> stop_{false};
    std::atomic<uint64_t> lookups_{0}, completions_{0}, lookup_cpu_ns_{0};
    fleet::etcd_client * etcd_ = nullptr;
    int64_t lease_ = 0;
};

}  // namespace rc::bench
