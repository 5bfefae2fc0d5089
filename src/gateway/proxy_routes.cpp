#include "gateway/proxy_routes.h"

#include <algorithm>
#include <span>

#include "http/api_error.h"
#include "http/json_fields.h"
#include "gateway/prompt_keys.h"
#include "gateway/request_shape.h"
#include "gateway/upstream_call.h"
#include "util/log.h"

namespace rc::gateway {
using namespace rc::http;  // written against the HTTP shell (src/http)

namespace {

using ojson = nlohmann::ordered_json;
using clock = std::chrono::steady_clock;

http::http_response error(const std::string & path, int status, const std::string & message, const std::string & code = {}) {
    auto r = http::error_response(http::dialect_for_path(path), status, message, {}, code);
    if (status == 503) r.headers.push_back({"Retry-After", "1"});
    return r;
}

std::string path_with_query(const http::http_request & req) {
    std::string out = req.path;
    char sep = '?';
    for (const auto & [k, v] : req.query) {
        out += sep + http::url_encode(k) + "=" + http::url_encode(v);
        sep = '&';
    }
    return out;
}

// Where a candidate's cache answer came from.
enum class answer_source : uint8_t { none, index, lookup };

// Everything one request's routing decided. The vectors are parallel to the candidates.
struct routing {
    std::shared_ptr<const route_view> view;  // the routable hosts that serve the model
    std::span<const host_view> candidates() const { return view->hosts(); }
    route_plan plan;
    std::vector<lookup_reply> lookups;
    std::vector<answer_source> sources;
    std::vector<route_candidate> inputs;
    std::vector<uint64_t> chain;  // the prompt's prefix keys
    std::string how = "none";     // index | lookup | mixed | none: where the cache inputs came from
    // The candidate of that id (plan.order names them).
    size_t position(const std::string & id) const {
        const auto c = candidates();
        return static_cast<size_t>(std::find_if(c.begin(), c.end(), [&](const auto & h) { return h.id == id; }) - c.begin());
    }
};

// The answer when no host can take the request: 404 for a model no host has, 503 while the hosts
// that have it are not up (or the gateway has not read the fleet yet).
http::http_response no_host(gateway_context & g, const request_shape & shape, const std::string & path) {
    if (!g.hosts.synced()) return error(path, 503, "the gateway has not read the fleet from etcd yet");
    std::string holders;
    for (const auto & h : g.hosts.hosts()) {
        if (!shape.model.empty() && !h.serves(shape.model)) continue;
        if (shape.model.empty() && h.models.empty()) continue;
        holders += (holders.empty() ? "" : ", ") + h.id + " (" + (h.ejected ? "ejected after a failed connection" : h.state) + ")";
    }
    if (shape.model.empty()) return error(path, 503, holders.empty() ? "no host of the fleet is up" : "no host of the fleet is up: " + holders);
    if (holders.empty()) return error(path, 404, "model '" + shape.model + "' not found on any host of the fleet");
    return error(path, 503, "no host that serves '" + shape.model + "' is up: " + holders);
}

// POST /v1/kv/lookup to the candidates `ask` (positions) in parallel, waiting at most `timeout`; the
// answers into r.lookups.
void ask_hosts(gateway_context & g, const request_shape & shape, const http::http_request & req, const std::vector<size_t> & ask,
               std::chrono::milliseconds timeout, routing & r) {
    auto body = shape.lookup_body;
    body["timeout_ms"] = std::max<int64_t>(1, timeout.count());
    const std::string text = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    std::vector<http::client_request> calls;
    for (size_t i : ask) {
        const auto & h = r.candidates()[i];
        http::client_request c;
        c.method = "POST";
        c.url = h.url + "/v1/kv/lookup";
        c.headers = {"Content-Type: application/json", "Expect:"};
        for (auto & a : upstream_auth(g, req)) c.headers.push_back(std::move(a));
        c.body = text;
        c.timeout = timeout;
        c.connect_timeout = std::min(timeout, g.opts.connect_timeout);
        c.reuse_connection = true;
        calls.push_back(std::move(c));
    }
    const auto t0 = clock::now();
    auto replies = parallel_calls(calls);
    g.metrics.lookup_time(std::chrono::duration<double>(clock::now() - t0).count());
    for (size_t i = 0; i < replies.size(); ++i) {
        const auto & id = r.candidates()[ask[i]].id;
        auto reply = parse_lookup_reply(replies[i]);
        g.metrics.lookup(id, reply.answer.has_value());
        if (reply.busy >= 0) g.hosts.note_load(id, reply.busy, reply.slots);
        r.lookups[ask[i]] = std::move(reply);
        r.sources[ask[i]] = answer_source::lookup;
    }
}

// Where the gateway fetches a model's vocabulary: a candidate that has it loaded (its stream
// announced it), else the first.
std::string vocab_source(const gateway_context & g, const route_view & view) {
    const auto hosts = view.hosts();
    for (size_t i = 0; i < hosts.size(); ++i)
        if (view.candidates->loaded[i] && g.kv_feed.trusted(hosts[i].id)) return hosts[i].url;
    return hosts.front().url;
}

routing plan_request(gateway_context & g, const request_shape & shape, const http::http_request & req) {
    routing r;
    r.view = g.views.get(shape.model);
    const auto candidates = r.candidates();
    if (candidates.empty()) return r;
    r.lookups.resize(candidates.size());
    r.sources.assign(candidates.size(), answer_source::none);
    r.chain = prefix_chain(shape.canonical);
    const auto affinity = g.index.affinity(r.chain, shape.canonical.size());

    if (g.opts.policy == route_policy::cache && shape.lookup && candidates.size() > 1) {
        const auto t0 = clock::now();
        if (auto vocab = g.opts.use_index ? g.vocabs.get(shape.model, vocab_source(g, *r.view)) : nullptr) {
            auto known = answer_from_index(*vocab, shape.lookup_body, *r.view, g.kv_feed, g.blocks);
            for (size_t i = 0; i < known.answers.size(); ++i)
                if (known.answers[i]) {
                    r.lookups[i].answer = known.answers[i];
                    r.sources[i] = answer_source::index;
                }
        }
        std::vector<size_t> ask;  // the candidates the index could not answer for
        for (size_t i = 0; i < candidates.size(); ++i)
            if (r.sources[i] != answer_source::index) ask.push_back(i);
        if (!ask.empty()) ask_hosts(g, shape, req, ask, affinity.empty() ? g.opts.lookup_grace : g.opts.lookup_timeout, r);
        r.how = ask.empty() ? "index" : ask.size() == candidates.size() ? "lookup" : "mixed";
        g.metrics.route_time(r.how, std::chrono::duration<double>(clock::now() - t0).count());
    }
    std::vector<host_load> loads;
    g.hosts.loads(*r.view->candidates, loads);
    r.inputs.resize(candidates.size());
    for (size_t i = 0; i < candidates.size(); ++i) {
        const auto & h = candidates[i];
        auto & c = r.inputs[i];
        c.id = h.id;
        c.busy = loads[i].busy();
        c.slots = loads[i].slots;
        c.model_loaded = r.view->candidates->loaded[i];
        if (r.sources[i] != answer_source::none) {
            const auto & l = r.lookups[i];
            c.lookup = l.answer;
            if (l.busy >= 0) c.busy = std::max(loads[i].inflight, l.busy);
            if (l.slots > 0) c.slots = l.slots;
        }
        // A host whose KV stream broke (killed, cut off) earns no credit for what it held: its lookup
        // is refused too, and affinity alone sent it one more request "for its cache".
        if (auto a = affinity.find(h.id); a != affinity.end() && !g.kv_feed.lost(h.id)) c.affinity = a->second;
        c.held = g.index.held(h.id);
    }
    const uint64_t turn = g.turn.fetch_add(1);
    const uint64_t spread = shape.canonical.empty() ? turn : fnv1a(shape.canonical.substr(0, 1024));
    r.plan = plan_route(g.opts.policy, r.inputs, g.opts.weights, spread, turn);
    return r;
}

http::client_request upstream_request(gateway_context & g, const host_view & h, const http::http_request & req) {
    http::client_request u;
    u.method = req.method == "HEAD" ? "GET" : req.method;
    u.url = h.url + path_with_query(req);
    std::string type = req.header("content-type");
    u.headers = {"Content-Type: " + (type.empty() ? std::string("application/json") : type), "Expect:"};
    if (auto accept = req.header("accept"); !accept.empty()) u.headers.push_back("Accept: " + accept);
    if (!req.remote_addr.empty()) u.headers.push_back("X-Forwarded-For: " + req.remote_addr);
    for (auto & a : upstream_auth(g, req)) u.headers.push_back(std::move(a));
    u.body = req.body;
    u.timeout = std::chrono::milliseconds(0);  // a generation may take as long as it takes
    u.connect_timeout = g.opts.connect_timeout;
    u.reuse_connection = true;  // a kept connection per host: no TCP handshake per forwarded request
    return u;
}

void tag(http::http_response & r, const std::string & host, const std::string & reason) {
    r.headers.push_back({"X-Rustycage-Host", host});
    r.headers.push_back({"X-Rustycage-Route", reason});
}

http::http_response forward(gateway_context & g, const http::http_request & req) {
    const auto arrived = clock::now();
    auto shape = shape_request(req.method, req.path, req.body, req.query);
    if (!shape.ok()) return error(req.path, 400, shape.err().message);
    routing r = plan_request(g, shape.value(), req);
    if (r.candidates().empty()) return no_host(g, shape.value(), req.path);

    std::string failures;
    const size_t attempts = std::min(r.plan.order.size(), static_cast<size_t>(std::max(1, g.opts.max_attempts)));
    for (size_t i = 0; i < attempts; ++i) {
        const std::string id = r.plan.order[i];
        const size_t at = r.position(id);
        const host_view * h = &r.candidates()[at];
        const std::string reason = i == 0 ? r.plan.reason : "failover";
        g.metrics.routed(id, reason);
        if (const auto & a = r.lookups[at].answer; i == 0 && a) g.metrics.cached_tokens(id, *a);
        rc::log::debug("gateway", "route", {{"path", req.path}, {"model", shape->model}, {"host", id}, {"reason", reason}});

        const double routing_s = std::chrono::duration<double>(clock::now() - arrived).count();
        if (i == 0) g.metrics.forward_time(routing_s);
        auto & hosts = g.hosts;
        auto attempt = std::make_shared<upstream_attempt>(
            upstream_request(g, *h, req), [&hosts, id] { return !host_view::routable_state(hosts.state_of(id)); }, [&hosts, id] { return hosts.state_of(id) == "down"; },
            hosts.begin(id));
        const auto outcome = attempt->wait(req.client_gone);
        if (outcome == upstream_attempt::outcome::client_gone) {
            http::http_response gone = error(req.path, 499, "the client closed the connection");
            return gone;
        }
        if (outcome == upstream_attempt::outcome::failed) {
            g.metrics.upstream_failure(id, "before_first_byte");
            g.hosts.eject(id);
            rc::log::warn("gateway", "upstream_failed", {{"host", id}, {"path", req.path}, {"error", attempt->error()}, {"note", "trying the next host"}});
            failures += (failures.empty() ? "" : "; ") + id + ": " + attempt->error();
            continue;
        }
        const long status = attempt->status();
        if (outcome == upstream_attempt::outcome::complete && status >= 500 && i + 1 < attempts) {
            g.metrics.upstream_failure(id, "error_status");
            failures += (failures.empty() ? "" : "; ") + id + ": HTTP " + std::to_string(status);
            continue;
        }
        if (status >= 200 && status < 300) g.index.record(r.chain, id);
        http::http_response out;
        out.status = static_cast<int>(status);
        const std::string type = attempt->content_type();
        out.content_type = type.empty() ? "application/json" : type;
        if (auto retry = attempt->header("Retry-After"); !retry.empty()) out.headers.push_back({"Retry-After", retry});
        tag(out, id, reason);
        out.headers.push_back({"X-Rustycage-Route-Us", std::to_string(static_cast<long long>(routing_s * 1e6))});
        if (outcome == upstream_attempt::outcome::complete) {
            out.body = attempt->body();
            return out;
        }
        out.stream = [attempt, path = req.path, type, id, &g](http::stream_sink & sink) {
            auto end = attempt->relay(sink);
            if (end.client_gone || end.error.empty()) return;
            g.metrics.upstream_failure(id, "mid_stream");
            rc::log::warn("gateway", "stream_broken", {{"host", id}, {"path", path}, {"error", end.error}});
            sink.write(stream_error_frame(path, type,
                                          "host " + id + " failed while streaming (" + end.error +
                                              "); the answer is incomplete and was not retried, so nothing was generated twice"));
        };
        return out;
    }
    return error(req.path, 502, "every host that could serve this request failed before answering: " + failures);
}

// POST /v1/kv/lookup on the gateway: what the router sees for this prompt, and what it would choose.
http::http_response explain(gateway_context & g, const http::http_request & req) {
    auto parsed = http::parse_json_bounded(req.body);
    if (!parsed || !parsed->is_object()) return error(req.path, 400, "the request body must be a JSON object");
    const auto & body = *parsed;
    const std::string api = body.value("api", "openai");
    const bool messages = body.contains("messages") && !body["messages"].is_null();
    const std::string as = api == "ollama"      ? (messages ? "/api/chat" : "/api/generate")
                           : api == "responses" ? "/v1/responses"
                                                : (messages ? "/v1/chat/completions" : "/v1/completions");
    auto shape = shape_request("POST", as, req.body, {});
    if (!shape.ok()) return error(req.path, 400, shape.err().message);
    if (!shape->lookup) return error(req.path, 400, api == "responses" ? "'input' is required" : "'messages' or 'prompt' is required");
    routing r = plan_request(g, shape.value(), req);
    if (r.candidates().empty()) return no_host(g, shape.value(), req.path);
    ojson cands = ojson::array();
    for (size_t i = 0; i < r.plan.order.size(); ++i) {
        const size_t at = r.position(r.plan.order[i]);
        const route_candidate * c = &r.inputs[at];
        ojson lookup = nullptr;
        const std::string & err = r.lookups[at].error;
        if (const auto & a = r.lookups[at].answer)
            lookup = {{"loaded", a->loaded}, {"prompt_tokens", a->prompt_tokens}, {"tiers", {{"context", a->context}, {"host", a->host}, {"disk", a->disk}}}};
        const auto src = r.sources[at];
        const char * source = src == answer_source::index ? "index" : src == answer_source::lookup ? "lookup" : "none";
        cands.push_back({{"id", c->id}, {"score", r.plan.scores[i]}, {"cached_share", cached_share(*c, g.opts.weights)}, {"busy", c->busy},
                         {"slots", c->slots}, {"affinity", c->affinity}, {"lookup", lookup}, {"source", source}, {"error", err}});
    }
    http::http_response out;
    out.body = ojson{{"model", shape->model}, {"policy", policy_name(g.opts.policy)}, {"chosen", r.plan.order.front()}, {"reason", r.plan.reason}, {"inputs", r.how},
                     {"candidates", cands}}
                   .dump();
    return out;
}

}  // namespace

std::vector<std::string> upstream_auth(const gateway_context & g, const http::http_request & client) {
    if (!g.opts.host_api_key.empty()) return {"Authorization: Bearer " + g.opts.host_api_key};
    std::vector<std::string> out;
    if (auto a = client.header("authorization"); !a.empty()) out.push_back("Authorization: " + a);
    if (auto k = client.header("x-api-key"); !k.empty()) out.push_back("X-Api-Key: " + k);
    return out;
}

std::vector<http::route> proxy_routes(gateway_context & g) {
    std::vector<http::route> out;
    auto fwd = [&g](const http::http_request & req) { return forward(g, req); };
    for (const char * p : {"/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/responses", "/api/generate", "/api/chat", "/api/embed",
                           "/api/embeddings", "/api/show", "/tokenize", "/detokenize", "/apply-template", "/v1/kv/prefetch"})
        out.push_back({"POST", p, fwd});
    out.push_back({"GET", "/props", fwd});
    out.push_back({"POST", "/v1/kv/lookup", [&g](const http::http_request & req) { return explain(g, req); }});
    return out;
}

}  // namespace rc::gateway
