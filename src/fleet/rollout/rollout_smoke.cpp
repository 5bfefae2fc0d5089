#include "fleet/rollout/rollout_smoke.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "http/http_client.h"
#include "fleet/host/server_probe.h"

namespace rc::fleet {

namespace {

using json = nlohmann::json;

struct caller {
    std::string base, api_key;
    std::chrono::milliseconds timeout;

    result<http::client_reply> call(const std::string & method, const std::string & path, const json & body = nullptr) const {
        http::client_request req;
        req.method = method;
        req.url = base + path;
        req.timeout = timeout;
        if (!body.is_null()) {
            req.headers.push_back("Content-Type: application/json");
            req.body = body.dump();
        }
        if (!api_key.empty()) req.headers.push_back("Authorization: Bearer " + api_key);
        return http::call(req);
    }
};

// "" when the reply is a 200 with a JSON object; else why not.
std::string json_reply(const result<http::client_reply> & r, json & out) {
    if (!r.ok()) return r.err().message;
    if (r->status != 200) return "HTTP " + std::to_string(r->status) + ": " + r->body.substr(0, 300);
    out = json::parse(r->body, nullptr, false);
    return out.is_object() ? "" : "the answer is not a JSON object: " + r->body.substr(0, 200);
}

std::string check_chat(const caller & c, const std::string & model) {
    json j;
    const json body = {{"model", model}, {"messages", {{{"role", "user"}, {"content", "Say hello."}}}}, {"max_tokens", 4}, {"temperature", 0}};
    if (auto why = json_reply(c.call("POST", "/v1/chat/completions", body), j); !why.empty()) return why;
    if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty()) return "the answer has no choices";
    const auto & msg = j["choices"][0].value("message", json());
    if (!msg.is_object() || msg.value("role", "") != "assistant") return "the first choice has no assistant message";
    if (!j["choices"][0].contains("finish_reason") || !j["choices"][0]["finish_reason"].is_string()) return "the first choice did not finish";
    return "";
}

std::string check_embedding(const caller & c, const std::string & model) {
    json j;
    if (auto why = json_reply(c.call("POST", "/v1/embeddings", {{"model", model}, {"input", "hello"}}), j); !why.empty()) return why;
    if (!j.contains("data") || !j["data"].is_array() || j["data"].empty()) return "the answer has no data";
    const auto & v = j["data"][0].value("embedding", json());
    if (!v.is_array() || v.empty()) return "the embedding is empty";
    for (const auto & x : v)
        if (!x.is_number() || !std::isfinite(x.get<double>())) return "the embedding has a non-finite value";
    return "";
}

bool is_embedding_model(const caller & c, const std::string & model) {
    json j;
    if (!json_reply(c.call("POST", "/api/show", {{"model", model}}), j).empty()) return false;
    if (!j.contains("capabilities") || !j["capabilities"].is_array()) return false;
    for (const auto & cap : j["capabilities"])
        if (cap == "embedding") return true;
    return false;
}

}  // namespace

smoke_report smoke_server(const std::string & openai_url, const std::vector<std::string> & models, const std::string & api_key,
                          std::chrono::milliseconds timeout) {
    smoke_report rep;
    const caller c{openai_url, api_key, timeout};
    auto fail = [&](const std::string & what, const std::string & why) {
        rep.failure = what + ": " + why;
        return rep;
    };
    if (openai_url.empty()) return fail("ready", "the server published no address");
    if (auto ready = probe_ready(openai_url, timeout); !ready.ready) return fail("ready", ready.error.empty() ? "not ready" : ready.error);
    rep.checked.push_back("ready");
    for (const auto & m : models) {
        const bool embedding = is_embedding_model(c, m);
        const std::string what = (embedding ? "embedding " : "chat ") + m;
        if (auto why = embedding ? check_embedding(c, m) : check_chat(c, m); !why.empty()) return fail(what, why);
        rep.checked.push_back(what);
    }
    auto metrics = c.call("GET", "/metrics");
    if (!metrics.ok()) return fail("metrics", metrics.err().message);
    if (metrics->status != 200) return fail("metrics", "HTTP " + std::to_string(metrics->status));
    bool ours = false;
    for (const auto & s : parse_prometheus_text(metrics->body)) ours = ours || s.name.starts_with("rustycage_");
    if (!ours) return fail("metrics", "/metrics has no rustycage_ series");
    rep.checked.push_back("metrics");
    rep.passed = true;
    return rep;
}

}  // namespace rc::fleet
