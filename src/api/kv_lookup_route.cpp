// POST /v1/kv/lookup: the body is read by the route it names (`api` + messages|prompt|input) with that
// route's own readers and rendered by the session's render_prompts (request_prompt.h) — so the
// tokens looked up are exactly the tokens that route would submit. GET /v1/kv/vocab: the model's
// vocabulary for a gateway that computes those tokens itself.
#include "api/kv_lookup_route.h"

#include <chrono>

#include "http/api_error.h"
#include "api/generation_session.h"
#include "api/request_prompt.h"
#include "http/json_fields.h"
#include "api/ollama/ollama_options.h"
#include "llama/vocab_file.h"

namespace rc::api {
using namespace rc::http;  // written against the HTTP shell (src/http)

namespace {

constexpr long long default_timeout_ms = 1000, max_timeout_ms = 10000;

http_response json_ok(const json & body) {
    http_response r;
    r.body = dump(body);
    return r;
}

json tiers_json(const engine::kv_lookup & l) { return {{"context", l.context}, {"host", l.host}, {"disk", l.disk}}; }

}  // namespace

json server_load(api_context & ctx) {
    int running = 0, queued = 0;
    ctx.models.visit_loaded([&](const models::loaded_model &, const engine::engine & e) {
        const auto st = e.stats();
        running += st.running;
        queued += st.queued;
    });
    return {{"running", running}, {"queued", queued}, {"slots", ctx.opts.n_parallel}};
}

namespace {

http_response lookup(api_context & ctx, const http_request & req) {
    json body = parse_body(req);
    const std::string requested = require_string(body, "model");
    const std::string api = opt_string(body, "api").value_or("openai");
    if (api != "openai" && api != "ollama" && api != "responses") bad_request("'api' must be openai, responses or ollama", "api");
    const auto timeout = std::chrono::milliseconds(opt_int(body, "timeout_ms", 1, max_timeout_ms).value_or(default_timeout_ms));
    const bool has_messages = body.contains("messages") && !body["messages"].is_null();
    const bool has_prompt = body.contains("prompt") && !body["prompt"].is_null();
    if (api == "responses" && (!body.contains("input") || body["input"].is_null())) bad_request("'input' is required", "input");
    if (api != "responses" && !has_messages && !has_prompt) bad_request("'messages' or 'prompt' is required", "messages");
    const auto entry = find_model_entry(ctx, requested);

    json out = {{"model", entry.name}, {"loaded", false}, {"prompt_tokens", nullptr}, {"cached_tokens", 0},
                {"tiers", tiers_json({})}, {"load", server_load(ctx)}};
    // A lookup never loads a model (tokenizing needs it); an unloaded one holds nothing.
    auto lease = ctx.models.peek(entry.name);
    if (!lease) return json_ok(out);
    engine::engine & eng = lease->engine();
    if (eng.is_embedding()) bad_request("'" + entry.name + "' is an embedding model: it caches no prompt", "model");

    if (api == "ollama") {
        engine::generation_request options;  // validated as /api/chat and /api/generate would; they shape no prompt
        ollama::read_options(body, ctx, options);
    }
    auto prompt = read_request_prompt(entry, eng.model(), eng.n_ctx(), body, api);
    auto found = eng.lookup(std::move(prompt.tokens), prompt.cache_salt, timeout);
    if (!found) throw api_error(503, "the engine of '" + entry.name + "' did not answer the lookup within " + std::to_string(timeout.count()) + " ms");
    out["loaded"] = true;
    out["prompt_tokens"] = found->prompt_tokens;
    out["cached_tokens"] = found->cached();
    out["tiers"] = tiers_json(*found);
    return json_ok(out);
}

// GET /v1/kv/vocab?model=NAME: the model's vocabulary GGUF (llama/vocab_file.h) with its catalog
// entry's Modelfile defaults under `rustycage.model_entry` — what read_request_prompt reads besides
// the body. No model is loaded: the file's header is read.
http_response vocab(api_context & ctx, const http_request & req) {
    auto q = req.query.find("model");
    if (q == req.query.end() || q->second.empty()) bad_request("the 'model' query parameter is required", "model");
    const auto entry = find_model_entry(ctx, q->second);
    json defaults = {{"name", entry.name}, {"parameters", entry.parameters}};
    if (entry.system) defaults["system"] = *entry.system;
    if (entry.template_text) defaults["template"] = *entry.template_text;
    auto bytes = llama::vocab_gguf(entry.path.string(), {{std::string(vocab_entry_key), dump(defaults)}});
    if (!bytes) raise(bytes.err(), "model");
    http_response r;
    r.content_type = "application/octet-stream";
    r.body = std::move(bytes.value());
    return r;
}

}  // namespace

std::vector<route> kv_lookup_routes(api_context & ctx) {
    return {{"POST", "/v1/kv/lookup", [&ctx](const http_request & req) { return lookup(ctx, req); }},
            {"GET", "/v1/kv/vocab", [&ctx](const http_request & req) { return vocab(ctx, req); }}};
}

}  // namespace rc::api
