#include "gateway/gateway_server.h"

#include <algorithm>

#include "http/api_error.h"
#include "http/request_guard.h"
#include "http/server_shell.h"
#include "gateway/fleet_routes.h"
#include "gateway/proxy_routes.h"
#include "util/log.h"

namespace rc::gateway {
using namespace rc::http;  // written against the HTTP shell (src/http)

std::vector<http::route> gateway_routes(gateway_context & g) {
    std::vector<http::route> routes = fleet_routes(g);
    for (auto & r : proxy_routes(g)) routes.push_back(std::move(r));
    return http::with_cors(std::move(routes));
}

gateway_server::gateway_server(fleet::etcd_client & etcd, fleet::fleet_keys keys, gateway_options opts, std::chrono::milliseconds eject_for)
    : hosts_(etcd, std::move(keys), eject_for) {
    metrics_.collect_hosts(hosts_);
    metrics_.set_build_info(opts.version, opts.llama_commit);
    ctx_ = std::make_unique<gateway_context>(std::move(opts), hosts_, metrics_);
    metrics_.collect_vocabs(ctx_->vocabs);
}

gateway_server::~gateway_server() { stop(); }

status gateway_server::start(const gateway_listen & listen) {
    if (auto st = http::check_api_keys(ctx_->opts.api_keys); !st) return st;
    std::vector<int> ports = {listen.openai_port};
    if (listen.ollama_port >= 0) ports.push_back(listen.ollama_port);
    // The hosts' own CORS, key checks and limits: one policy for the whole fleet.
    http::shell_hooks hooks;
    hooks.api_keys = ctx_->opts.api_keys;
    hooks.log_component = "gateway";
    hooks.on_complete = [g = ctx_.get()](const http::http_request & req, int status, double ms) {
        g->metrics.record_request(req.route, req.method, status, ms / 1000.0);
    };
    if (auto st = listeners_.start(listen.host, ports, [this] { return gateway_routes(*ctx_); }, http::shell_options(listen, std::move(hooks))); !st) return st;
    openai_port_ = listeners_.port(0);
    ollama_port_ = listeners_.port(1);
    watch_ = std::thread([this] { hosts_.run([this] { return stopping_.load(); }); });
    prober_ = std::thread([this] { hosts_.run_probes([this] { return stopping_.load(); }, std::chrono::milliseconds(500), std::chrono::milliseconds(1000)); });
    // The KV event streams follow the routable hosts (kv_event_feed.h).
    feeder_ = std::thread([this] {
        while (!stopping_) {
            ctx_->kv_feed.follow(hosts_.hosts());
            std::unique_lock lock(feeder_mu_);
            feeder_cv_.wait_for(lock, std::chrono::milliseconds(500), [this] { return stopping_.load(); });
        }
    });
    rc::log::info("gateway", "listening", {{"host", listen.host}, {"openai_port", openai_port_}, {"ollama_port", ollama_port_},
                                           {"policy", policy_name(ctx_->opts.policy)}});
    return {};
}

void gateway_server::stop() {
    stopping_ = true;
    listeners_.stop();
    if (watch_.joinable()) watch_.join();
    if (prober_.joinable()) prober_.join();
    {
        std::lock_guard lock(feeder_mu_);
        feeder_cv_.notify_all();
    }
    if (feeder_.joinable()) feeder_.join();
    ctx_->kv_feed.stop();
}

}  // namespace rc::gateway
