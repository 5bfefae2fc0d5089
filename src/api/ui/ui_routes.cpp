#include "api/ui/ui_routes.h"

#include <algorithm>
#include <chrono>

#include "api/ui/ui_assets.h"
#include "store/timestamps.h"

namespace rc::api::ui {

namespace {

using clock = std::chrono::system_clock;

constexpr std::string_view prefix = "/ui/";

// Only this origin: scripts, styles, images and fetches. uPlot sizes its elements through the
// CSSOM (allowed), the pages style nothing inline. frame-ancestors: the console holds an API key,
// so no other site may frame it.
const char * content_security_policy = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
                                       "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

http_response json_ok(const json & body) {
    http_response r;
    r.body = dump(body);
    r.headers.push_back({"Cache-Control", "no-store"});
    return r;
}

http_response not_found(std::string_view path) {
    http_response r;
    r.status = 404;
    r.content_type = "text/plain; charset=utf-8";
    r.body = "no console file " + std::string(path) + " (the console is at /ui/)\n";
    return r;
}

// If-None-Match may list several tags ("a", "b") or be "*".
bool etag_matches(const std::string & if_none_match, std::string_view etag) {
    if (if_none_match.empty()) return false;
    if (if_none_match == "*") return true;
    return if_none_match.find(etag) != std::string::npos;
}

http_response serve_asset(const http_request & req) {
    std::string_view rest = std::string_view(req.path).substr(prefix.size());
    if (rest.empty()) rest = "index.html";
    const ui_asset * a = find_ui_asset(rest);
    if (!a) return not_found(req.path);
    http_response r;
    r.headers = {{"ETag", std::string(a->etag)},
                 // Revalidate every load: cheap with the ETag, and an upgraded binary shows at once.
                 {"Cache-Control", "no-cache"},
                 {"X-Content-Type-Options", "nosniff"},
                 {"Referrer-Policy", "no-referrer"},
                 {"Content-Security-Policy", content_security_policy}};
    r.content_type = std::string(a->content_type);
    if (etag_matches(req.header("if-none-match"), a->etag)) {
        r.status = 304;
        return r;
    }
    r.body = std::string(a->body);
    return r;
}

http_response redirect_to_index(const http_request &) {
    http_response r;
    r.status = 301;
    r.content_type = "text/plain; charset=utf-8";
    r.headers.push_back({"Location", std::string(prefix)});
    r.body = "the console is at /ui/\n";
    return r;
}

json time_json(clock::time_point t) { return store::format_rfc3339(t); }

json seconds_or_null(std::chrono::nanoseconds d) {
    if (d == std::chrono::nanoseconds::max()) return nullptr;  // keep_alive forever
    return std::chrono::duration<double>(d).count();
}

json server_facts(const api_context & ctx) {
    const auto now = clock::now();
    const auto & mo = ctx.models.options();
    const auto & eo = ctx.models.engine_options();
    json models = json::array();
    for (const auto & lm : ctx.models.loaded()) {
        models.push_back({{"name", lm.name},
                          {"memory_bytes", lm.memory},
                          {"loaded_at", time_json(lm.loaded_at)},
                          {"leases", lm.leases},
                          {"keep_alive_seconds", seconds_or_null(lm.keep_alive)}});
    }
    std::sort(models.begin(), models.end(), [](const json & a, const json & b) { return a["name"] < b["name"]; });
    const auto & kv = eo.kv;
    return {{"version", ctx.opts.version},
            {"llama_commit", ctx.opts.llama_commit},
            {"started_at", time_json(ctx.started)},
            {"now", time_json(now)},
            {"uptime_seconds", std::chrono::duration<double>(now - ctx.started).count()},
            {"api_key_required", !ctx.opts.api_keys.empty()},
            {"memory", {{"budget_bytes", mo.memory_budget > 0 ? json(mo.memory_budget) : json(nullptr)},
                        {"in_use_bytes", ctx.models.memory_in_use()}}},
            {"device", {{"memory_bytes", mo.fit.device_memory > 0 ? json(mo.fit.device_memory) : json(nullptr)},
                        {"in_use_bytes", ctx.models.device_in_use()}}},
            {"engine", {{"ctx_size", eo.n_ctx},
                        {"parallel", eo.n_parallel},
                        {"max_queue", eo.max_queue},
                        {"threads", eo.n_threads},
                        {"kv_type", eo.kv_type == GGML_TYPE_F32 ? "f32" : eo.kv_type == GGML_TYPE_Q8_0 ? "q8_0" : "f16"},
                        {"flash_attn", eo.flash_attn_auto ? json("auto") : json(eo.flash_attn)}}},
            {"kv", {{"block_size", kv.block_size},
                    {"cached_sequences", kv.cached_sequences},
                    {"host_budget_bytes", kv.host_budget},
                    {"disk_dir", kv.disk_dir.empty() ? json(nullptr) : json(kv.disk_dir.string())},
                    {"disk_budget_bytes", kv.disk_dir.empty() ? json(0) : json(kv.disk_budget)},
                    {"write_through", kv.write_through}}},
            {"models", models}};
}

http_response fleet_document(const fleet_source & source) {
    if (!source) return json_ok({{"configured", false}, {"message", "no fleet configured: this server runs standalone"}});
    auto doc = source();
    if (!doc.ok()) return json_ok({{"configured", true}, {"error", doc.err().message}});
    json out = std::move(doc.value());
    if (!out.is_object()) return json_ok({{"configured", true}, {"error", "the fleet source returned no JSON object"}});
    out["configured"] = true;
    return json_ok(out);
}

}  // namespace

const ui_asset * find_ui_asset(std::string_view path) {
    auto all = ui_assets();
    auto it = std::lower_bound(all.begin(), all.end(), path, [](const ui_asset & a, std::string_view p) { return a.path < p; });
    return it != all.end() && it->path == path ? &*it : nullptr;
}

bool is_static_path(std::string_view path) { return path == "/ui" || path.starts_with(prefix); }

std::vector<route> ui_routes(api_context & ctx, fleet_source fleet) {
    return {
        {"GET", "/ui", redirect_to_index},
        {"GET", "/ui/*", serve_asset},
        {"GET", "/v1/console/server", [&ctx](const http_request &) { return json_ok(server_facts(ctx)); }},
        {"GET", "/v1/console/fleet", [fleet = std::move(fleet)](const http_request &) { return fleet_document(fleet); }},
    };
}

}  // namespace rc::api::ui
