#include "http/server_shell.h"

#include "http/api_error.h"
#include "http/request_guard.h"
#include "util/log.h"

namespace rc::http {

bool is_public_path(const std::string & path) {
    return path == "/" || path == "/health" || path.rfind("/v1/health/", 0) == 0 || path == "/api/version" || path == "/v1/version" ||
           path == "/metrics" || path == "/v1/metrics";
}

namespace {

const char * refusal_message(int status) {
    switch (status) {
        case 408: return "the request header did not arrive in time";
        case 413: return "request body too large";
        case 431: return "the request header is too large";
        case 503: return "too many open connections; retry shortly";
        default: return "bad request";
    }
}

// Queue full, model unloading, connections over the cap: a 503 that says when to come back.
// OpenAI's SDKs retry 429 and 5xx and honour Retry-After; Ollama answers a full queue with 503 too.
void add_retry_after(http_response & r) {
    if (r.status != 503 && r.status != 429) return;
    for (const auto & [k, v] : r.headers)
        if (k == "Retry-After") return;
    r.headers.push_back({"Retry-After", "1"});
}

}  // namespace

http_server_options shell_options(const shell_limits & limits, shell_hooks hooks) {
    http_server_options o;
    o.max_body_bytes = limits.max_body_bytes;
    o.max_connections = limits.max_connections;
    o.header_timeout = limits.header_timeout;
    auto h = std::make_shared<shell_hooks>(std::move(hooks));
    o.before = [h](const http_request & req) {
        const bool open = is_public_path(req.path) || (h->is_public && h->is_public(req.path));
        return guard_request(req, h->api_keys, open);
    };
    o.on_exception = [h](const http_request & req, std::exception_ptr ep) {
        http_response r;
        try {
            std::rethrow_exception(ep);
        } catch (const api_error & e) {
            r = error_response(dialect_for_path(req.path), e.status, e.what(), e.param);
        } catch (const std::exception & e) {
            rc::log::error(h->log_component, "unhandled", {{"path", req.path}, {"what", e.what()}});
            r = error_response(dialect_for_path(req.path), 500, std::string("internal error: ") + e.what());
        } catch (...) {
            r = error_response(dialect_for_path(req.path), 500, "internal error");
        }
        add_retry_after(r);
        add_cors(r, req);
        return r;
    };
    o.on_status = [](const http_request & req, int status) {
        const std::string msg = status == 404 ? "no route for " + req.method + " " + req.path : refusal_message(status);
        auto r = error_response(dialect_for_path(req.path), status, msg, {}, status == 404 ? "route_not_found" : "");
        add_retry_after(r);
        add_cors(r, req);
        return r;
    };
    o.on_complete = h->on_complete;
    return o;
}

std::vector<route> with_cors(std::vector<route> routes) {
    routes.push_back({"OPTIONS", "/*", [](const http_request &) {
                          http_response r;
                          r.status = 204;
                          r.content_type = "text/plain";
                          return r;
                      }});
    for (auto & r : routes) {
        if (!r.handler) continue;  // uploads add their own headers
        r.handler = [h = std::move(r.handler)](const http_request & req) {
            http_response resp = h(req);
            add_cors(resp, req);
            return resp;
        };
    }
    return routes;
}

listeners::~listeners() { stop(); }

status listeners::start(const std::string & host, const std::vector<int> & ports, const std::function<std::vector<route>()> & routes,
                        const http_server_options & options) {
    for (int port : ports) {
        auto srv = std::make_unique<http_server>(routes(), options);
        auto bound = srv->bind(host, port);
        if (!bound) {
            stop();
            return bound.err();
        }
        ports_.push_back(bound.value());
        servers_.push_back(std::move(srv));
    }
    for (auto & s : servers_) threads_.emplace_back([srv = s.get()] { srv->serve(); });
    // A stop() before the listeners run would be lost and leave serve() blocked forever.
    for (auto & s : servers_) s->wait_until_serving();
    return {};
}

void listeners::stop() {
    for (auto & s : servers_) s->begin_drain();  // every port at once: none takes new requests while another drains
    for (auto & s : servers_) s->stop();
    for (auto & t : threads_)
        if (t.joinable()) t.join();
    threads_.clear();
    servers_.clear();
    ports_.clear();
}

}  // namespace rc::http
