#pragma once
// `rustycage gateway`: one address for the fleet (docs/GATEWAY.md). Serves the OpenAI and Ollama
// routes of a host on two listeners (like `serve`), learns hosts and their models from the fleet's
// etcd records (host_table.h), and forwards each request to the best up host for it
// (proxy_routes.h); listings are the union over the fleet (fleet_routes.h).
//
// Cross-cutting, exactly as on a host (the shared shell, http/server_shell.h): API keys (--api-key;
// health and metrics stay public), CORS incl. the official clients' x-stainless-* headers, errors in
// each API's shape, body, connection and header limits, the request metrics.
// Contract: start() binds both ports (errors: io) and starts the fleet watch; stop() (also the
// destructor) ends both. Any thread may call stop().
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "http/http_server.h"
#include "http/server_shell.h"
#include "fleet/etcd/etcd_client.h"
#include "fleet/etcd/fleet_keys.h"
#include "gateway/gateway_context.h"

namespace rc::gateway {
using namespace rc::http;  // written against the HTTP shell (src/http)

// Where to listen, and the limits of every listener: the same shell as a host's (http/server_shell.h).
struct gateway_listen : http::shell_limits {
    std::string host = "127.0.0.1";
    int openai_port = 8080;   // 0: any free port
    int ollama_port = 11434;  // 0: any free port; -1: no second listener
};

class gateway_server {
  public:
    gateway_server(fleet::etcd_client & etcd, fleet::fleet_keys keys, gateway_options opts, std::chrono::milliseconds eject_for = std::chrono::seconds(10));
    ~gateway_server();

    status start(const gateway_listen & listen);
    void stop();
    int openai_port() const { return openai_port_; }
    int ollama_port() const { return ollama_port_; }
    gateway_context & context() { return *ctx_; }

  private:
    host_table hosts_;
    gateway_metrics metrics_;
    std::unique_ptr<gateway_context> ctx_;
    http::listeners listeners_;
    std::thread watch_;
    std::thread prober_;  // hosts whose lease lapsed: does their server still answer?
    std::thread feeder_;  // starts and stops the hosts' KV event streams
    std::mutex feeder_mu_;
    std::condition_variable feeder_cv_;
    std::atomic<bool> stopping_{false};
    int openai_port_ = -1, ollama_port_ = -1;
};

// The gateway's route table (exposed for tests).
std::vector<http::route> gateway_routes(gateway_context & g);

}  // namespace rc::gateway
