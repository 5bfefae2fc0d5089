#include "api/health_routes.h"

#include "http/json_fields.h"

namespace rc::api {
using namespace rc::http;  // written against the HTTP shell (src/http)

namespace {

// Ready when nothing is pending at startup (preloads) and a model can be served: one is loaded, or
// the catalog has one to load on demand.
bool servable(api_context & ctx) { return !ctx.models.loaded().empty() || !ctx.models.catalog().list().empty(); }

http_response json_response(int status, const json & body) {
    http_response r;
    r.status = status;
    r.body = dump(body);
    return r;
}

}  // namespace

std::vector<route> health_routes(api_context & ctx) {
    return {
        {"GET", "/v1/health/live",
         [](const http_request &) { return json_response(200, {{"object", "health.response"}, {"message", "live"}, {"status", "live"}}); }},
        {"GET", "/v1/health/ready",
         [&ctx](const http_request &) {
             if (auto pending = ctx.startup->pending(); !pending.empty())
                 return json_response(503, {{"object", "health.response"}, {"message", pending}, {"status", "not_ready"}, {"error", "starting"}});
             if (servable(ctx)) return json_response(200, {{"object", "health.response"}, {"message", "ready to serve"}, {"status", "ready"}});
             return json_response(503, {{"object", "health.response"}, {"message", "no servable model in " + ctx.models.catalog().dir().string()},
                                        {"status", "not_ready"}, {"error", "no servable model"}});
         }},
        {"GET", "/health",
         [&ctx](const http_request &) {
             if (auto pending = ctx.startup->pending(); !pending.empty())  // llama-server's "loading model"
                 return json_response(503, {{"error", {{"code", 503}, {"message", pending}, {"type", "unavailable_error"}}}});
             if (servable(ctx)) return json_response(200, {{"status", "ok"}});
             return json_response(503, {{"error", {{"code", 503}, {"message", "no servable model"}, {"type", "unavailable_error"}}}});
         }},
        {"GET", "/v1/version", [&ctx](const http_request &) { return json_response(200, {{"release", ctx.opts.version}, {"api", "v1"}}); }},
        {"GET", "/api/version", [&ctx](const http_request &) { return json_response(200, {{"version", ctx.opts.version}}); }},
        {"GET", "/",
         [](const http_request &) {
             http_response r;
             r.content_type = "text/plain; charset=utf-8";
             r.body = "Ollama is running";
             return r;
         }},
    };
}

}  // namespace rc::api
