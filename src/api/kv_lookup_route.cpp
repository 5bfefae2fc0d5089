#include "api/kv_lookup_route.h"

#include <json.h>

#include <algorithm>
#include <chrono>

#include "api/api_error.h"
#include "api/json_fields.h"
#include "api/ollama/chat_messages.h"
#include "api/ollama/ollama_common.h"
#include "api/ollama/ollama_options.h"
#include "engine/chat_format.h"

namespace rc::api {

namespace {

common_chat_msg text_message(const char * role, const std::string & content) {
    common_chat_msg m;
    m.role = role;
    m.content = content;
    return m;
}

std::vector<llama_token> render_and_tokenize(const llama::model & m, const engine::chat_input & in, bool add_special) {
    auto rendered = engine::render_chat(m, in);
    if (!rendered) raise(rendered.err());
    return m.tokenize(rendered->text, add_special, true);
}

// OpenAI chat: as /v1/chat/completions renders it (developer is system; tools; reasoning off).
std::vector<llama_token> openai_chat_tokens(const json & body, const llama::model & m) {
    json msgs = body.at("messages");
    if (!msgs.is_array() || msgs.empty()) bad_request("'messages' must be a non-empty array", "messages");
    for (size_t i = 0; i < msgs.size(); ++i) {
        if (!msgs[i].is_object() || !msgs[i].contains("role") || !msgs[i]["role"].is_string())
            bad_request("messages[" + std::to_string(i) + "] must be an object with a string 'role'", "messages");
        if (msgs[i]["role"] == "developer") msgs[i]["role"] = "system";
    }
    engine::chat_input in;
    try {
        in.messages = common_chat_msgs_parse_oaicompat(common_json::parse(dump(msgs)));
        if (auto t = body.find("tools"); t != body.end() && t->is_array()) in.tools = common_chat_tools_parse_oaicompat(common_json::parse(dump(*t)));
    } catch (const std::exception & e) {
        bad_request(std::string("'messages' or 'tools': ") + e.what(), "messages");
    }
    if (auto effort = opt_string(body, "reasoning_effort"); effort && *effort == "none") in.enable_thinking = false;
    return render_and_tokenize(m, in, true);
}

// Ollama chat: as /api/chat renders it, the model's own system prompt included.
std::vector<llama_token> ollama_chat_tokens(api_context & ctx, const std::string & name, json body, const llama::model & m) {
    auto model_system = ollama::apply_model_defaults(ctx, name, body);
    engine::chat_input in;
    in.messages = ollama::read_messages(body);
    if (in.messages.empty()) bad_request("'messages' must not be empty", "messages");
    const bool has_system = std::any_of(in.messages.begin(), in.messages.end(), [](const auto & x) { return x.role == "system"; });
    if (model_system && !has_system) in.messages.insert(in.messages.begin(), text_message("system", *model_system));
    in.tools = ollama::read_tools(body);
    in.parallel_tool_calls = true;
    in.json_schema = ollama::read_format(body);
    in.enable_thinking = ollama::read_think(body).value_or(true);
    return render_and_tokenize(m, in, true);
}

// Ollama generate: `context` tokens, then the prompt as a user turn (with `system`), or raw.
std::vector<llama_token> ollama_generate_tokens(api_context & ctx, const std::string & name, json body, const llama::model & m) {
    auto model_system = ollama::apply_model_defaults(ctx, name, body);
    const std::string prompt = opt_string(body, "prompt").value_or("");
    const bool raw = ollama::read_bool(body, "raw", false);
    std::vector<llama_token> out;
    if (auto c = body.find("context"); c != body.end() && !c->is_null()) {
        if (!c->is_array()) bad_request("'context' must be an array of token ids", "context");
        for (const auto & t : *c) {
            if (!t.is_number_integer() || !m.valid_token(t.get<llama_token>())) bad_request("'context' token ids must be within the vocabulary", "context");
            out.push_back(t.get<llama_token>());
        }
    }
    const bool add_special = out.empty();
    std::vector<llama_token> tokens;
    if (raw) {
        tokens = m.tokenize(prompt, add_special, true);
    } else {
        engine::chat_input in;
        const std::string system = opt_string(body, "system").value_or(model_system.value_or(""));
        if (!system.empty()) in.messages.push_back(text_message("system", system));
        in.messages.push_back(text_message("user", prompt));
        in.json_schema = ollama::read_format(body);
        in.enable_thinking = ollama::read_think(body).value_or(true);
        tokens = render_and_tokenize(m, in, add_special);
    }
    out.insert(out.end(), tokens.begin(), tokens.end());
    return out;
}

// OpenAI completions: a string, token ids, or a list of either (the first is looked up).
std::vector<llama_token> openai_prompt_tokens(const json & prompt, const llama::model & m) {
    const json * p = &prompt;
    if (p->is_array() && !p->empty() && (p->front().is_string() || p->front().is_array())) p = &p->front();
    if (p->is_string()) return m.tokenize(p->get<std::string>(), true, false);
    std::vector<llama_token> out;
    if (!p->is_array()) bad_request("'prompt' must be a string, token ids, or a list of them", "prompt");
    for (const auto & t : *p) {
        if (!t.is_number_integer() || !m.valid_token(t.get<llama_token>())) bad_request("'prompt' token ids must be within the vocabulary", "prompt");
        out.push_back(t.get<llama_token>());
    }
    return out;
}

http_response lookup(api_context & ctx, const http_request & req) {
    json body = parse_body(req);
    const std::string requested = require_string(body, "model");
    const std::string api = opt_string(body, "api").value_or("openai");
    if (api != "openai" && api != "ollama") bad_request("'api' must be openai or ollama", "api");
    const auto timeout = std::chrono::milliseconds(opt_int(body, "timeout_ms", 1, 10000).value_or(1000));
    const bool has_messages = body.contains("messages") && !body["messages"].is_null();
    const bool has_prompt = body.contains("prompt") && !body["prompt"].is_null();
    if (!has_messages && !has_prompt) bad_request("'messages' or 'prompt' is required", "messages");
    const std::string salt = opt_string(body, "cache_salt").value_or("");

    auto entry = ctx.models.catalog().find(requested);
    if (!entry) throw api_error(404, "model '" + requested + "' not found", "model");
    json load = {{"running", 0}, {"queued", 0}, {"slots", ctx.opts.n_parallel}};
    std::shared_ptr<engine::engine> eng;
    int running = 0, queued = 0;
    for (const auto & l : ctx.models.loaded()) {
        const auto st = l.engine->stats();
        running += st.running;
        queued += st.queued;
        if (l.name == entry->name) eng = l.engine;
    }
    load["running"] = running;
    load["queued"] = queued;
    json out = {{"model", entry->name}, {"loaded", eng != nullptr}};
    if (!eng) {
        // Tokenizing needs the model, and a lookup never loads one.
        out["prompt_tokens"] = nullptr;
        out["cached_tokens"] = 0;
        out["tiers"] = {{"context", 0}, {"host", 0}, {"disk", 0}};
        out["load"] = load;
        http_response r;
        r.body = dump(out);
        return r;
    }
    const auto & m = eng->model();
    std::vector<llama_token> tokens;
    if (api == "ollama") tokens = has_messages ? ollama_chat_tokens(ctx, requested, body, m) : ollama_generate_tokens(ctx, requested, body, m);
    else tokens = has_messages ? openai_chat_tokens(body, m) : openai_prompt_tokens(body["prompt"], m);

    auto found = eng->lookup(std::move(tokens), salt, timeout);
    if (!found) throw api_error(503, "the engine of '" + entry->name + "' did not answer the lookup within " + std::to_string(timeout.count()) + " ms");
    out["prompt_tokens"] = found->prompt_tokens;
    out["cached_tokens"] = found->cached();
    out["tiers"] = {{"context", found->context}, {"host", found->host}, {"disk", found->disk}};
    out["load"] = load;
    http_response r;
    r.body = dump(out);
    return r;
}

}  // namespace

std::vector<route> kv_lookup_routes(api_context & ctx) {
    return {{"POST", "/v1/kv/lookup", [&ctx](const http_request & req) { return lookup(ctx, req); }}};
}

}  // namespace rc::api
