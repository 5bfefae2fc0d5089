#include "api/api_server.h"

#include <algorithm>

#include "api/api_error.h"
#include "api/request_guard.h"
#include "api/health_routes.h"
#include "api/json_fields.h"
#include "api/kv_lookup_route.h"
#include "api/ollama/ollama_routes.h"
#include "api/openai/openai_routes.h"
#include "api/server_routes.h"
#include "api/ui/ui_routes.h"
#include "metrics/text_format.h"
#include "util/log.h"

namespace rc::api {

namespace {

// Health, version and metrics stay reachable without a key: load balancers and Prometheus scrapers
// probe them, and they carry no prompts or outputs. So do the console's static pages, which must
// load before they can ask for the key (its data routes are not public).
bool is_public(const std::string & path) {
    return path == "/" || path == "/health" || path.rfind("/v1/health/", 0) == 0 || path == "/api/version" || path == "/v1/version" ||
           path == "/metrics" || path == "/v1/metrics" || ui::is_static_path(path);
}

http_server_options server_options(api_context & ctx, const listen_options & listen) {
    http_server_options o;
    o.max_body_bytes = listen.max_body_bytes;
    o.max_connections = listen.max_connections;
    o.header_timeout = listen.header_timeout;
    o.before = [&ctx](const http_request & req) { return guard_request(req, ctx.opts.api_keys, is_public(req.path)); };
    o.on_exception = [](const http_request & req, std::exception_ptr ep) {
        http_response r;
        try {
            std::rethrow_exception(ep);
        } catch (const api_error & e) {
            r = error_response(dialect_for_path(req.path), e.status, e.what(), e.param);
        } catch (const std::exception & e) {
            rc::log::error("api", "unhandled", {{"path", req.path}, {"what", e.what()}});
            r = error_response(dialect_for_path(req.path), 500, std::string("internal error: ") + e.what());
        } catch (...) {
            r = error_response(dialect_for_path(req.path), 500, "internal error");
        }
        // Queue full / model unloading: a 503 that says when to come back. OpenAI's SDKs retry 429
        // and 5xx and honour Retry-After; Ollama answers a full queue with 503 too, so that is ours.
        if (r.status == 503 || r.status == 429) r.headers.push_back({"Retry-After", "1"});
        add_cors(r, req);
        return r;
    };
    o.on_status = [](const http_request & req, int status) {
        std::string msg = status == 404 ? "no route for " + req.method + " " + req.path
                          : status == 413 ? "request body too large"
                          : status == 408 ? "the request header did not arrive in time"
                          : status == 431 ? "the request header is too large"
                          : status == 503 ? "too many open connections; retry shortly"
                                          : "bad request";
        auto r = error_response(dialect_for_path(req.path), status, msg, {}, status == 404 ? "route_not_found" : "");
        add_cors(r, req);
        return r;
    };
    o.on_complete = [&ctx](const http_request & req, int status, double ms) {
        ctx.metrics->record_request(req.route, req.method, status, ms / 1000.0);
        rc::log::debug("api", "request", {{"method", req.method}, {"path", req.path}, {"status", status}, {"ms", ms}});
    };
    return o;
}

}  // namespace

std::vector<route> metrics_routes(api_context & ctx) {
    auto expose = [&ctx](const http_request &) {
        http_response r;
        r.content_type = metrics::text_content_type;
        r.body = ctx.metrics->expose();
        return r;
    };
    return {{"GET", "/metrics", expose}, {"GET", "/v1/metrics", expose}};
}

std::vector<route> all_routes(api_context & ctx, const ui::fleet_source & fleet) {
    std::vector<route> routes = health_routes(ctx);
    for (auto & r : metrics_routes(ctx)) routes.push_back(std::move(r));
    for (auto & r : server_routes(ctx)) routes.push_back(std::move(r));
    for (auto & r : kv_lookup_routes(ctx)) routes.push_back(std::move(r));
    for (auto & r : openai::all_routes(ctx)) routes.push_back(std::move(r));
    for (auto & r : ollama::all_routes(ctx)) routes.push_back(std::move(r));
    for (auto & r : ui::ui_routes(ctx, fleet)) routes.push_back(std::move(r));
    // CORS preflight on any path: `before` answers it (204 + Allow-* headers); without a route
    // httplib would answer OPTIONS with 404 before `before` ever ran.
    routes.push_back({"OPTIONS", "/*", [](const http_request &) {
                          http_response r;
                          r.status = 204;
                          r.content_type = "text/plain";
                          return r;
                      }});
    // Every response carries CORS headers so browser clients can read it.
    for (auto & r : routes) {
        r.handler = [h = std::move(r.handler)](const http_request & req) {
            http_response resp = h(req);
            add_cors(resp, req);
            return resp;
        };
    }
    return routes;
}

api_server::api_server(models::model_manager & models, api_options opts, ui::fleet_source fleet)
    : ctx_{models, std::move(opts)}, fleet_(std::move(fleet)) {
    ctx_.metrics->collect_models(ctx_.models);
    ctx_.metrics->set_build_info(ctx_.opts.version, ctx_.opts.llama_commit);
}

api_server::~api_server() { stop(); }

status api_server::start(const listen_options & listen) {
    // A key list the auth check could misread is refused outright, whoever built the options.
    if (auto st = check_api_keys(ctx_.opts.api_keys); !st) return st;
    std::vector<int> ports = {listen.openai_port};
    if (listen.ollama_port >= 0) ports.push_back(listen.ollama_port);
    for (size_t i = 0; i < ports.size(); ++i) {
        auto srv = std::make_unique<http_server>(all_routes(ctx_, fleet_), server_options(ctx_, listen));
        auto bound = srv->bind(listen.host, ports[i]);
        if (!bound) {
            stop();
            return bound.err();
        }
        (i == 0 ? openai_port_ : ollama_port_) = bound.value();
        servers_.push_back(std::move(srv));
    }
    for (auto & s : servers_) threads_.emplace_back([srv = s.get()] { srv->serve(); });
    // A stop() before the listeners run would be lost and leave serve() blocked forever.
    for (auto & s : servers_) s->wait_until_serving();
    rc::log::info("api", "listening", {{"host", listen.host}, {"openai_port", openai_port_}, {"ollama_port", ollama_port_}});
    return {};
}

void api_server::stop() {
    for (auto & s : servers_) s->stop();
    for (auto & t : threads_) {
        if (t.joinable()) t.join();
    }
    threads_.clear();
    servers_.clear();
}

}  // namespace rc::api
