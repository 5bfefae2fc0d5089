#pragma once
// What every gateway route shares: the settings, the fleet picture, the prefix index and metrics.
#include <atomic>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "http/http_server.h"
#include "gateway/block_index.h"
#include "gateway/gateway_metrics.h"
#include "gateway/host_table.h"
#include "gateway/kv_event_feed.h"
#include "gateway/model_vocabs.h"
#include "gateway/prefix_index.h"
#include "gateway/route_planner.h"
#include "gateway/route_view.h"

namespace rc::gateway {
using namespace rc::http;  // written against the HTTP shell (src/http)

struct gateway_options {
    route_policy policy = route_policy::cache;
    route_weights weights;
    // How long the gateway waits for lookups: the full timeout when it has sent a host a prefix of
    // this prompt before (a hit is likely and worth the wait), the grace otherwise (a hit is unlikely;
    // an idle host still answers within it, a busy one must not delay a fresh conversation).
    std::chrono::milliseconds lookup_timeout{250};
    std::chrono::milliseconds lookup_grace{50};
    // Route from the block index: the hosts' KV events and the gateway's own key chains (a vocab-only
    // load per model), asking only the hosts the index cannot answer for. false: ask every candidate.
    bool use_index = true;
    int max_attempts = 3;                           // hosts tried per request (failover before the first byte)
    std::chrono::milliseconds connect_timeout{1000};
    std::chrono::milliseconds listing_timeout{2000};  // /v1/models, /api/tags, /api/ps fan-outs
    std::vector<std::string> api_keys;  // clients must present one (health and metrics stay public); empty: none
    std::string host_api_key;           // sent to hosts as a bearer key; empty: the client's Authorization is passed on
    std::string version = "0.1.0";
    std::string llama_commit;
};

struct gateway_context {
    gateway_context(gateway_options o, host_table & h, gateway_metrics & m)
        : opts(std::move(o)), hosts(h), metrics(m), kv_feed(blocks, kv_feed_options{opts.host_api_key, std::chrono::milliseconds(3000), std::chrono::milliseconds(1000),
                                                                       [&h](const std::string & id, int busy, int slots) { h.note_load(id, busy, slots); },
                                                                       [this](const std::string & id) { index.forget(id); }}),
          views(h, kv_feed, blocks),
          vocabs([key = opts.host_api_key](const std::string & url, const std::string & model) { return fetch_vocab(url, model, key); }) {}

    gateway_options opts;
    host_table & hosts;
    gateway_metrics & metrics;
    prefix_index index;
    block_index blocks;      // which host holds which KV block, from the hosts' KV events
    kv_event_feed kv_feed;   // keeps `blocks` fed (one stream per routable host)
    route_views views;       // each model's candidates with their stream and block-table numbers
    model_vocabs vocabs;     // each model's vocabulary: the gateway computes prompts' block keys itself
    std::atomic<uint64_t> turn{0};  // round-robin position
    std::chrono::system_clock::time_point started = std::chrono::system_clock::now();
};

// The header lines that authenticate the gateway to a host (see gateway_options::host_api_key).
std::vector<std::string> upstream_auth(const gateway_context & g, const http::http_request & client);

}  // namespace rc::gateway
