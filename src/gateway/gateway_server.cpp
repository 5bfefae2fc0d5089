#include "gateway/gateway_server.h"

#include <algorithm>

#include "api/api_error.h"
#include "api/request_guard.h"
#include "gateway/fleet_routes.h"
#include "gateway/proxy_routes.h"
#include "util/log.h"

namespace rc::gateway {

namespace {

bool is_public(const std::string & path) {
    return path == "/" || path == "/health" || path.rfind("/v1/health/", 0) == 0 || path == "/api/version" || path == "/v1/version" ||
           path == "/metrics" || path == "/v1/metrics";
}

api::http_server_options server_options(gateway_context & g) {
    api::http_server_options o;
    o.max_body_bytes = g.opts.max_body_bytes;
    // The hosts' own CORS and key checks (api/request_guard.h): one policy for the whole fleet.
    o.before = [&g](const api::http_request & req) { return api::guard_request(req, g.opts.api_keys, is_public(req.path)); };
    o.on_exception = [](const api::http_request & req, std::exception_ptr ep) {
        api::http_response r;
        try {
            std::rethrow_exception(ep);
        } catch (const std::exception & e) {
            rc::log::error("gateway", "unhandled", {{"path", req.path}, {"what", e.what()}});
            r = api::error_response(api::dialect_for_path(req.path), 500, std::string("internal error: ") + e.what());
        } catch (...) {
            r = api::error_response(api::dialect_for_path(req.path), 500, "internal error");
        }
        api::add_cors(r, req);
        return r;
    };
    o.on_status = [](const api::http_request & req, int status) {
        std::string msg = status == 404 ? "no route for " + req.method + " " + req.path : status == 413 ? "request body too large" : "bad request";
        auto r = api::error_response(api::dialect_for_path(req.path), status, msg, {}, status == 404 ? "route_not_found" : "");
        api::add_cors(r, req);
        return r;
    };
    o.on_complete = [&g](const api::http_request & req, int status, double ms) { g.metrics.record_request(req.route, req.method, status, ms / 1000.0); };
    return o;
}

}  // namespace

std::vector<api::route> gateway_routes(gateway_context & g) {
    std::vector<api::route> routes = fleet_routes(g);
    for (auto & r : proxy_routes(g)) routes.push_back(std::move(r));
    routes.push_back({"OPTIONS", "/*", [](const api::http_request &) {
                          api::http_response r;
                          r.status = 204;
                          r.content_type = "text/plain";
                          return r;
                      }});
    for (auto & r : routes) {
        r.handler = [h = std::move(r.handler)](const api::http_request & req) {
            api::http_response resp = h(req);
            api::add_cors(resp, req);
            return resp;
        };
    }
    return routes;
}

gateway_server::gateway_server(fleet::etcd_client & etcd, fleet::fleet_keys keys, gateway_options opts, std::chrono::milliseconds eject_for)
    : hosts_(etcd, std::move(keys), eject_for) {
    metrics_.collect_hosts(hosts_);
    metrics_.set_build_info(opts.version, opts.llama_commit);
    ctx_ = std::make_unique<gateway_context>(std::move(opts), hosts_, metrics_);
}

gateway_server::~gateway_server() { stop(); }

status gateway_server::start(const gateway_listen & listen) {
    if (auto st = api::check_api_keys(ctx_->opts.api_keys); !st) return st;
    std::vector<int> ports = {listen.openai_port};
    if (listen.ollama_port >= 0) ports.push_back(listen.ollama_port);
    for (size_t i = 0; i < ports.size(); ++i) {
        auto srv = std::make_unique<api::http_server>(gateway_routes(*ctx_), server_options(*ctx_));
        auto bound = srv->bind(listen.host, ports[i]);
        if (!bound) {
            stop();
            return bound.err();
        }
        (i == 0 ? openai_port_ : ollama_port_) = bound.value();
        servers_.push_back(std::move(srv));
    }
    watch_ = std::thread([this] { hosts_.run([this] { return stopping_.load(); }); });
    for (auto & s : servers_) threads_.emplace_back([srv = s.get()] { srv->serve(); });
    for (auto & s : servers_) s->wait_until_serving();
    rc::log::info("gateway", "listening", {{"host", listen.host}, {"openai_port", openai_port_}, {"ollama_port", ollama_port_},
                                           {"policy", policy_name(ctx_->opts.policy)}});
    return {};
}

void gateway_server::stop() {
    stopping_ = true;
    for (auto & s : servers_) s->stop();
    for (auto & t : threads_)
        if (t.joinable()) t.join();
    threads_.clear();
    servers_.clear();
    if (watch_.joinable()) watch_.join();
}

}  // namespace rc::gateway
