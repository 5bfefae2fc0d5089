#include "gateway/fleet_routes.h"

#include <set>

#include "http/api_error.h"
#include "gateway/request_shape.h"
#include "gateway/upstream_call.h"
#include "metrics/text_format.h"
#include "store/model_name.h"

namespace rc::gateway {
using namespace rc::http;  // written against the HTTP shell (src/http)

namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

http::http_response json_response(int status, const ojson & body) {
    http::http_response r;
    r.status = status;
    r.body = body.dump(-1, ' ', false, ojson::error_handler_t::replace);
    return r;
}

// GET `path` on every up host at once; the parsed answers by host (hosts that failed are absent).
std::vector<std::pair<host_view, json>> ask_up_hosts(gateway_context & g, const http::http_request & client, const std::string & path) {
    std::vector<host_view> up;
    std::vector<http::client_request> calls;
    for (const auto & h : g.hosts.hosts()) {
        if (!h.routable()) continue;
        http::client_request c;
        c.url = h.url + path;
        c.headers = upstream_auth(g, client);
        c.timeout = g.opts.listing_timeout;
        c.connect_timeout = std::min(g.opts.listing_timeout, g.opts.connect_timeout);
        calls.push_back(std::move(c));
        up.push_back(h);
    }
    auto replies = parallel_calls(calls);
    std::vector<std::pair<host_view, json>> out;
    for (size_t i = 0; i < replies.size(); ++i) {
        json j = replies[i].ok() && replies[i]->ok() ? json::parse(replies[i]->body, nullptr, false) : json();
        out.emplace_back(up[i], j.is_object() ? j : json());
    }
    return out;
}

// The union of every up host's `list_key` entries, by `id_key` (first host by id wins); hosts that
// did not answer contribute `fallback(model)` for each servable model of their record.
json union_of(gateway_context & g, const http::http_request & req, const std::string & path, const char * list_key, const char * id_key,
              const std::function<json(const fleet::model_fact &)> & fallback) {
    std::map<std::string, json> merged;
    for (auto & [h, j] : ask_up_hosts(g, req, path)) {
        if (j.contains(list_key) && j[list_key].is_array()) {
            for (const auto & m : j[list_key])
                if (m.is_object() && m.contains(id_key) && m[id_key].is_string()) merged.emplace(m[id_key].get<std::string>(), m);
        } else if (fallback) {
            for (const auto & m : h.models) {
                json f = fallback(m);
                merged.emplace(f[id_key].get<std::string>(), f);
            }
        }
    }
    json out = json::array();
    for (auto & [_, m] : merged) out.push_back(std::move(m));
    return out;
}

json openai_models(gateway_context & g, const http::http_request & req) {
    return union_of(g, req, "/v1/models", "data", "id", [](const fleet::model_fact & m) {
        return json{{"id", store::short_model_name(m.name)}, {"object", "model"}, {"created", 0}, {"owned_by", "rustycage"}};
    });
}

bool ready(gateway_context & g) {
    for (const auto & h : g.hosts.hosts())
        if (h.routable()) return true;
    return false;
}

std::string not_ready_why(gateway_context & g) {
    if (!g.hosts.synced()) return "the fleet has not been read from etcd yet";
    return g.hosts.hosts().empty() ? "no host is registered in the fleet" : "no host of the fleet is up";
}

http::http_response metadata(gateway_context & g) {
    std::set<std::string> models;
    ojson hosts = ojson::array();
    for (const auto & h : g.hosts.hosts()) {
        hosts.push_back({{"id", h.id}, {"state", h.state}});
        if (h.routable())
            for (const auto & m : h.models) models.insert(m.name);
    }
    ojson served = ojson::array(), info = ojson::array();
    for (const auto & m : models) {
        served.push_back(m);
        info.push_back({{"shortName", m}});
    }
    const std::string build = "rustycage " + g.opts.version + " gateway" + (g.opts.llama_commit.empty() ? "" : " (llama.cpp " + g.opts.llama_commit + ")");
    return json_response(200, {{"version", g.opts.version},
                               {"api", "v1"},
                               {"gateway", true},
                               {"policy", policy_name(g.opts.policy)},
                               {"build", {{"version", g.opts.version}, {"llama_commit", g.opts.llama_commit}, {"build_info", build}}},
                               {"modelInfo", info},
                               {"served_models", served},
                               {"hosts", hosts}});
}

http::http_response store_refused(const http::http_request & req) {
    return http::error_response(http::dialect::ollama, 501,
                               "'" + req.path + "' changes one host's model store and is not served by the gateway: run it on a host "
                               "(rustycage pull/create/rm there, or that host's own address); the gateway routes to the models hosts have");
}

}  // namespace

std::vector<http::route> fleet_routes(gateway_context & g) {
    std::vector<http::route> r;
    r.push_back({"GET", "/v1/models", [&g](const http::http_request & req) { return json_response(200, {{"object", "list"}, {"data", openai_models(g, req)}}); }});
    r.push_back({"GET", "/v1/models/:id", [&g](const http::http_request & req) {
                     const std::string id = req.path_params.at("id");
                     for (const auto & m : openai_models(g, req))
                         if (store::same_model_name(m.value("id", ""), id)) return json_response(200, m);
                     return http::error_response(http::dialect::openai, 404, "model '" + id + "' not found on any host of the fleet");
                 }});
    r.push_back({"GET", "/api/tags", [&g](const http::http_request & req) {
                     json models = union_of(g, req, "/api/tags", "models", "name", [](const fleet::model_fact & m) {
                         return json{{"name", m.name}, {"model", m.name}, {"modified_at", ""}, {"size", m.size}, {"digest", m.digest}, {"details", json::object()}};
                     });
                     return json_response(200, {{"models", models}});
                 }});
    r.push_back({"GET", "/api/ps", [&g](const http::http_request & req) { return json_response(200, {{"models", union_of(g, req, "/api/ps", "models", "name", nullptr)}}); }});
    r.push_back({"GET", "/v1/gateway/hosts", [&g](const http::http_request &) {
                     return json_response(200, {{"policy", policy_name(g.opts.policy)},
                                                 {"synced", g.hosts.synced()},
                                                 {"hosts", g.hosts.to_json()},
                                                 {"kv_events", g.kv_feed.to_json()},
                                                 {"block_index", {{"blocks", g.blocks.blocks()}, {"bytes", g.blocks.bytes()}}},
                                                 {"vocabularies", g.vocabs.to_json()}});
                 }});

    r.push_back({"GET", "/v1/health/live", [](const http::http_request &) {
                     return json_response(200, {{"object", "health.response"}, {"message", "live"}, {"status", "live"}});
                 }});
    r.push_back({"GET", "/v1/health/ready", [&g](const http::http_request &) {
                     if (ready(g)) return json_response(200, {{"object", "health.response"}, {"message", "ready to serve"}, {"status", "ready"}});
                     return json_response(503, {{"object", "health.response"}, {"message", not_ready_why(g)}, {"status", "not_ready"}, {"error", not_ready_why(g)}});
                 }});
    r.push_back({"GET", "/health", [&g](const http::http_request &) {
                     if (ready(g)) return json_response(200, {{"status", "ok"}});
                     return json_response(503, {{"error", {{"code", 503}, {"message", not_ready_why(g)}, {"type", "unavailable_error"}}}});
                 }});
    r.push_back({"GET", "/v1/version", [&g](const http::http_request &) { return json_response(200, {{"release", g.opts.version}, {"api", "v1"}}); }});
    r.push_back({"GET", "/api/version", [&g](const http::http_request &) { return json_response(200, {{"version", g.opts.version}}); }});
    r.push_back({"GET", "/", [](const http::http_request &) {
                     http::http_response resp;
                     resp.content_type = "text/plain; charset=utf-8";
                     resp.body = "Ollama is running";
                     return resp;
                 }});
    r.push_back({"GET", "/v1/metadata", [&g](const http::http_request &) { return metadata(g); }});

    auto expose = [&g](const http::http_request &) {
        http::http_response resp;
        resp.content_type = metrics::text_content_type;
        resp.body = g.metrics.expose();
        return resp;
    };
    r.push_back({"GET", "/metrics", expose});
    r.push_back({"GET", "/v1/metrics", expose});

    for (const char * p : {"/api/pull", "/api/push", "/api/create", "/api/copy", "/api/blobs/:digest"}) r.push_back({"POST", p, store_refused});
    r.push_back({"DELETE", "/api/delete", store_refused});
    r.push_back({"HEAD", "/api/blobs/:digest", store_refused});
    return r;
}

}  // namespace rc::gateway
