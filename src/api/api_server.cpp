#include "api/api_server.h"

#include <algorithm>

#include "http/api_error.h"
#include "http/request_guard.h"
#include "http/server_shell.h"
#include "api/health_routes.h"
#include "http/json_fields.h"
#include "api/kv_events_route.h"
#include "api/kv_lookup_route.h"
#include "api/ollama/ollama_routes.h"
#include "api/openai/openai_routes.h"
#include "api/server_routes.h"
#include "api/ui/ui_routes.h"
#include "metrics/text_format.h"
#include "util/log.h"

namespace rc::api {
using namespace rc::http;  // written against the HTTP shell (src/http)

namespace {

// The console's static pages must load before they can ask for the key (its data routes are not
// public); everything else public is the shell's list.
http_server_options server_options(api_context & ctx, const listen_options & listen) {
    shell_hooks hooks;
    hooks.api_keys = ctx.opts.api_keys;
    hooks.is_public = [](const std::string & path) { return ui::is_static_path(path); };
    hooks.on_complete = [&ctx](const http_request & req, int status, double ms) {
        ctx.metrics->record_request(req.route, req.method, status, ms / 1000.0);
        rc::log::debug("api", "request", {{"method", req.method}, {"path", req.path}, {"status", status}, {"ms", ms}});
    };
    return shell_options(listen, std::move(hooks));
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
    for (auto & r : kv_events_routes(ctx)) routes.push_back(std::move(r));
    for (auto & r : openai::all_routes(ctx)) routes.push_back(std::move(r));
    for (auto & r : ollama::all_routes(ctx)) routes.push_back(std::move(r));
    for (auto & r : ui::ui_routes(ctx, fleet)) routes.push_back(std::move(r));
    return with_cors(std::move(routes));
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
    if (auto st = listeners_.start(listen.host, ports, [this] { return all_routes(ctx_, fleet_); }, server_options(ctx_, listen)); !st) return st;
    openai_port_ = listeners_.port(0);
    ollama_port_ = listeners_.port(1);
    rc::log::info("api", "listening", {{"host", listen.host}, {"openai_port", openai_port_}, {"ollama_port", ollama_port_}});
    return {};
}

void api_server::end_requests() { ctx_.ending->store(true); }

void api_server::stop() {
    ctx_.stopping->store(true);
    listeners_.stop();
}

}  // namespace rc::api
