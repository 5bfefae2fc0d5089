#include "api/api_server.h"

#include <strings.h>

#include <algorithm>

#include "api/api_error.h"
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

const char * cors_allow_headers = "Authorization, Content-Type, OpenAI-Organization, OpenAI-Project, OpenAI-Beta, X-Stainless-Arch, "
                                  "X-Stainless-Lang, X-Stainless-OS, X-Stainless-Package-Version, X-Stainless-Runtime, "
                                  "X-Stainless-Runtime-Version, X-Stainless-Retry-Count, X-Stainless-Timeout, X-Stainless-Async, "
                                  "X-Stainless-Helper-Method, X-Stainless-Poll-Helper, X-Stainless-Custom-Poll-Interval, "
                                  "X-Requested-With, User-Agent, Accept";

// Health, version and metrics stay reachable without a key: load balancers and Prometheus scrapers
// probe them, and they carry no prompts or outputs. So do the console's static pages, which must
// load before they can ask for the key (its data routes are not public).
bool is_public(const std::string & path) {
    return path == "/" || path == "/health" || path.rfind("/v1/health/", 0) == 0 || path == "/api/version" || path == "/v1/version" ||
           path == "/metrics" || path == "/v1/metrics" || ui::is_static_path(path);
}

std::string trim(const std::string & s) {
    const auto b = s.find_first_not_of(" \t");
    if (b == std::string::npos) return {};
    return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// The key a request presents: `Authorization: Bearer <key>` (scheme case-insensitive), else
// `x-api-key`. Empty when it presents none.
std::string presented_key(const http_request & req) {
    const std::string auth = trim(req.header("authorization"));
    if (auth.size() > 7 && strncasecmp(auth.c_str(), "bearer ", 7) == 0) return trim(auth.substr(7));
    return trim(req.header("x-api-key"));
}

// Compares in time that depends on the lengths only, so response timing does not reveal how much
// of a guess was right.
bool same_key(const std::string & a, const std::string & b) {
    if (a.size() != b.size()) return false;
    unsigned char diff = 0;
    for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
    return diff == 0;
}

bool key_accepted(const std::vector<std::string> & keys, const std::string & presented) {
    if (presented.empty()) return false;  // never, whatever the key list holds
    bool ok = false;
    for (const auto & k : keys) ok = same_key(k, presented) || ok;
    return ok;
}

void add_cors(http_response & r, const http_request & req) {
    std::string origin = req.header("origin");
    r.headers.push_back({"Access-Control-Allow-Origin", origin.empty() ? "*" : origin});
    r.headers.push_back({"Vary", "Origin"});
}

http_server_options server_options(api_context & ctx, const listen_options & listen) {
    http_server_options o;
    o.max_body_bytes = listen.max_body_bytes;
    o.max_connections = listen.max_connections;
    o.header_timeout = listen.header_timeout;
    o.before = [&ctx](const http_request & req) -> std::unique_ptr<http_response> {
        if (req.method == "OPTIONS") {
            auto r = std::make_unique<http_response>();
            r->status = 204;
            r->content_type = "text/plain";
            add_cors(*r, req);
            r->headers.push_back({"Access-Control-Allow-Methods", "GET, POST, DELETE, HEAD, OPTIONS"});
            r->headers.push_back({"Access-Control-Allow-Headers", cors_allow_headers});
            r->headers.push_back({"Access-Control-Max-Age", "86400"});
            return r;
        }
        if (ctx.opts.api_keys.empty() || is_public(req.path)) return nullptr;
        if (key_accepted(ctx.opts.api_keys, presented_key(req))) return nullptr;
        auto r = std::make_unique<http_response>(error_response(dialect_for_path(req.path), 401, "invalid or missing API key"));
        r->headers.push_back({"WWW-Authenticate", "Bearer"});
        add_cors(*r, req);
        return r;
    };
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

status check_api_keys(const std::vector<std::string> & keys) {
    for (size_t i = 0; i < keys.size(); ++i) {
        const std::string & k = keys[i];
        const std::string which = "API key " + std::to_string(i + 1) + " of " + std::to_string(keys.size());
        if (k.empty()) return make_error(errc::invalid_argument, which + " is empty (an unset variable?): auth would be on with a key nobody can send");
        if (k.size() > 4096) return make_error(errc::invalid_argument, which + " is longer than 4096 bytes");
        for (unsigned char c : k) {
            if (c <= 0x20 || c >= 0x7f)
                return make_error(errc::invalid_argument, which + " holds a space, control or non-ASCII character; keys travel in an HTTP header");
        }
    }
    return {};
}

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
