// POST /v1/kv/lookup: the body is read by the route it names (`api` + messages|prompt) with that
// route's own readers, and the prompt is rendered and tokenized by the session's render_prompts —
// so the tokens looked up are exactly the tokens that route would submit.
#include "api/kv_lookup_route.h"

#include <chrono>

#include "http/api_error.h"
#include "api/generation_session.h"
#include "http/json_fields.h"
#include "api/ollama/ollama_options.h"
#include "api/ollama/ollama_routes.h"
#include "api/openai/openai_common.h"

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

// The body as the named route reads it: its prompt-shaping fields into a generation_input, and
// the cache salt the same route would pass to the engine.
generation_input read_input(api_context & ctx, const models::model_entry & entry, const std::string & api, json & body) {
    generation_input in;
    in.model = entry.name;
    const bool has_messages = body.contains("messages") && !body["messages"].is_null();
    if (api == "ollama") {
        if (has_messages) {
            ollama::read_chat_request(entry, body, in);
            if (in.chat->messages.empty()) bad_request("'messages' must not be empty: nothing to look up", "messages");
        } else if (!ollama::read_generate_request(entry, body, in)) {
            bad_request("'prompt' must not be empty: nothing to look up", "prompt");
        }
        ollama::read_options(body, ctx, in.params);
    } else {
        if (has_messages) {
            in.chat = openai::read_chat(body);
            in.prompt_field = "messages";
        } else {
            in.prompts = openai::read_prompts(body);
            in.prompts.resize(1);  // a list of prompts: the first is looked up
        }
        openai::read_sampling(body, in.params);
    }
    return in;
}

http_response lookup(api_context & ctx, const http_request & req) {
    json body = parse_body(req);
    const std::string requested = require_string(body, "model");
    const std::string api = opt_string(body, "api").value_or("openai");
    if (api != "openai" && api != "ollama") bad_request("'api' must be openai or ollama", "api");
    const auto timeout = std::chrono::milliseconds(opt_int(body, "timeout_ms", 1, max_timeout_ms).value_or(default_timeout_ms));
    const bool has_messages = body.contains("messages") && !body["messages"].is_null();
    const bool has_prompt = body.contains("prompt") && !body["prompt"].is_null();
    if (!has_messages && !has_prompt) bad_request("'messages' or 'prompt' is required", "messages");
    const auto entry = find_model_entry(ctx, requested);

    int running = 0, queued = 0;
    ctx.models.visit_loaded([&](const models::loaded_model &, const engine::engine & e) {
        const auto st = e.stats();
        running += st.running;
        queued += st.queued;
    });
    json out = {{"model", entry.name}, {"loaded", false}, {"prompt_tokens", nullptr}, {"cached_tokens", 0},
                {"tiers", tiers_json({})}, {"load", {{"running", running}, {"queued", queued}, {"slots", ctx.opts.n_parallel}}}};
    // A lookup never loads a model (tokenizing needs it); an unloaded one holds nothing.
    auto lease = ctx.models.peek(entry.name);
    if (!lease) return json_ok(out);
    engine::engine & eng = lease->engine();
    if (eng.is_embedding()) bad_request("'" + entry.name + "' is an embedding model: it caches no prompt", "model");

    generation_input in = read_input(ctx, entry, api, body);
    auto prompts = render_prompts(eng, in);
    auto found = eng.lookup(std::move(prompts.prompts.front()), in.params.cache_salt, timeout);
    if (!found) throw api_error(503, "the engine of '" + entry.name + "' did not answer the lookup within " + std::to_string(timeout.count()) + " ms");
    out["loaded"] = true;
    out["prompt_tokens"] = found->prompt_tokens;
    out["cached_tokens"] = found->cached();
    out["tiers"] = tiers_json(*found);
    return json_ok(out);
}

}  // namespace

std::vector<route> kv_lookup_routes(api_context & ctx) {
    return {{"POST", "/v1/kv/lookup", [&ctx](const http_request & req) { return lookup(ctx, req); }}};
}

}  // namespace rc::api
