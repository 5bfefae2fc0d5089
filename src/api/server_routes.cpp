#include "api/server_routes.h"

#include "http/api_error.h"
#include "api/chat_messages.h"
#include "api/generation_session.h"
#include "http/json_fields.h"
#include "api/reasoning_controls.h"
#include "engine/chat_format.h"
#include "util/utf8.h"

namespace rc::api {
using namespace rc::http;  // written against the HTTP shell (src/http)

namespace {

struct resolved_model {
    std::string name;  // the catalog's
    models::model_lease lease;
};

// The model a request names, else the first loaded model, else the only servable one. Loads it when
// needed (a model that is loading is not an error: the request waits). 400 when none can be chosen,
// 404 when the name is unknown.
resolved_model resolve_model(api_context & ctx, const std::optional<std::string> & requested) {
    std::optional<models::model_entry> entry;
    if (requested) {
        entry = find_model_entry(ctx, *requested);
    } else if (auto loaded = ctx.models.loaded(); !loaded.empty()) {
        entry = find_model_entry(ctx, loaded.front().name);
    } else if (auto servable = ctx.models.catalog().list(); servable.size() == 1) {
        entry = std::move(servable.front());
    } else {
        bad_request("'model' is required: " + std::to_string(servable.size()) + " models are servable and none is loaded", "model");
    }
    return {entry->name, lease_model(ctx, *entry)};
}

http_response json_ok(const json & body) {
    http_response r;
    r.body = dump(body);
    return r;
}

// llama-server's shape for a piece: the text when it is valid UTF-8, else its bytes.
void append_piece(std::string & out, const std::string & piece) {
    if (utf8::is_valid(piece)) {
        out += dump(json(piece));
        return;
    }
    out += '[';
    for (size_t i = 0; i < piece.size(); ++i) {
        if (i) out += ',';
        out += std::to_string(static_cast<unsigned char>(piece[i]));
    }
    out += ']';
}

// The answer is written as text, not built as a JSON tree: a tree of millions of {id, piece}
// objects took gigabytes for a large body; this takes a few bytes per token.
http_response tokenize(api_context & ctx, const http_request & req) {
    json body = parse_body(req);
    auto content = opt_string(body, "content");
    if (!content) bad_request("'content' is required and must be a string", "content");
    bool add_special = opt_bool(body, "add_special").value_or(false);
    bool with_pieces = opt_bool(body, "with_pieces").value_or(false);
    auto m = resolve_model(ctx, opt_string(body, "model"));
    const auto & model = m.lease.engine().model();
    check_prompt_text(m.lease.engine(), content->size(), "content");
    body = json();  // the parsed content is no longer needed
    // Like llama-server: special-token text ("<|im_start|>") becomes the special token.
    auto tokens = model.tokenize(*content, add_special, true);
    content.reset();
    http_response r;
    r.body = "{\"tokens\":[";
    r.body.reserve(tokens.size() * (with_pieces ? 24 : 7) + 16);
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (i) r.body += ',';
        if (!with_pieces) {
            r.body += std::to_string(tokens[i]);
            continue;
        }
        r.body += "{\"id\":" + std::to_string(tokens[i]) + ",\"piece\":";
        append_piece(r.body, model.token_to_piece(tokens[i], true));
        r.body += '}';
    }
    r.body += "]}";
    return r;
}

http_response detokenize(api_context & ctx, const http_request & req) {
    json body = parse_body(req);
    auto it = body.find("tokens");
    if (it == body.end() || it->is_null()) bad_request("'tokens' is required", "tokens");
    auto ids = read_token_ids(*it, "tokens");
    auto m = resolve_model(ctx, opt_string(body, "model"));
    const auto & model = m.lease.engine().model();
    for (int32_t t : ids) {
        if (!model.valid_token(t))
            bad_request("'tokens' must be integers within the vocabulary (0.." + std::to_string(model.info().n_vocab - 1) + ")", "tokens");
    }
    return json_ok({{"content", model.detokenize(std::vector<llama_token>(ids.begin(), ids.end()), true)}});
}

// body.messages (+ tools, add_generation_prompt) as the model's chat template renders them.
std::string render_messages(const json & body, const engine::engine & eng, bool generation_prompt_default, std::function<bool()> client_gone) {
    auto messages = body.find("messages");
    if (messages == body.end() || messages->is_null()) bad_request("'messages' is required", "messages");
    engine::chat_input in;
    in.messages = read_chat_messages(*messages);
    check_prompt_text(eng, chat_text_bytes(in.messages), "messages");
    if (auto tools = body.find("tools"); tools != body.end()) in.tools = read_chat_tools(*tools);
    in.add_generation_prompt = opt_bool(body, "add_generation_prompt").value_or(generation_prompt_default);
    read_reasoning_controls(body, in);
    in.cancelled = std::move(client_gone);
    auto rendered = engine::render_chat(eng.model(), in);
    if (!rendered) raise(rendered.err(), "messages");
    return rendered->text;
}

http_response apply_template(api_context & ctx, const http_request & req) {
    json body = parse_body(req);
    if (!body.contains("messages") || body["messages"].is_null()) bad_request("'messages' is required", "messages");
    auto m = resolve_model(ctx, opt_string(body, "model"));
    return json_ok({{"prompt", render_messages(body, m.lease.engine(), true, req.client_gone)}});
}

// A hint that a conversation resumes soon: its KV blocks on disk are read into host RAM now, so
// the next request does not wait for the disk. Takes the conversation so far as `messages` (chat,
// rendered without a generation prompt) or `prompt` (text or token ids); 202 when a read was
// scheduled, 200 with "scheduled": false when there is nothing to do (no disk tier).
http_response prefetch(api_context & ctx, const http_request & req) {
    json body = parse_body(req);
    auto m = resolve_model(ctx, opt_string(body, "model"));
    auto & eng = m.lease.engine();
    const auto & model = eng.model();
    std::vector<llama_token> tokens;
    if (body.contains("messages") && !body["messages"].is_null()) {
        std::string text = render_messages(body, eng, false, req.client_gone);
        check_prompt_text(eng, text.size(), "messages");
        tokens = model.tokenize(text, true, true);
    } else if (auto it = body.find("prompt"); it != body.end() && it->is_string()) {
        check_prompt_text(eng, it->get_ref<const std::string &>().size(), "prompt");
        tokens = model.tokenize(it->get<std::string>(), true, false);
    } else if (it != body.end() && it->is_array()) {
        for (int32_t t : read_token_ids(*it, "prompt")) {
            if (!model.valid_token(t)) bad_request("'prompt' token ids must be within the vocabulary", "prompt");
            tokens.push_back(t);
        }
    } else {
        bad_request("'messages' or 'prompt' (a string or token ids) is required", "prompt");
    }
    if (tokens.empty()) bad_request("nothing to prefetch: the prompt is empty", "prompt");
    bool scheduled = eng.prefetch(std::move(tokens), opt_string(body, "cache_salt").value_or(""));
    http_response r = json_ok({{"model", m.name}, {"scheduled", scheduled}});
    r.status = scheduled ? 202 : 200;
    return r;
}

std::string build_string(const api_options & o) {
    return "rustycage " + o.version + (o.llama_commit.empty() ? std::string() : " (llama.cpp " + o.llama_commit + ")");
}

http_response props(api_context & ctx, const http_request & req) {
    std::optional<std::string> requested;
    if (auto it = req.query.find("model"); it != req.query.end() && !it->second.empty()) requested = it->second;
    auto m = resolve_model(ctx, requested);
    const auto & eng = m.lease.engine();
    const auto & model = eng.model();
    auto token_text = [&](llama_token t) { return t == LLAMA_TOKEN_NULL ? std::string() : model.token_to_piece(t, true); };
    std::string tmpl = model.templates() ? common_chat_templates_source(model.templates()) : std::string();
    json out = {
        {"model", m.name},
        {"model_path", model.path()},
        {"n_ctx", eng.n_ctx()},
        {"total_slots", ctx.opts.n_parallel},
        {"default_generation_settings", {{"model", m.name}, {"n_ctx", eng.n_ctx()}}},
        {"chat_template", tmpl},
        {"bos_token", token_text(llama_vocab_bos(model.vocab()))},
        {"eos_token", token_text(llama_vocab_eos(model.vocab()))},
        {"is_embedding", eng.is_embedding()},
        {"modalities", {{"vision", false}, {"audio", false}}},
        {"build_info", build_string(ctx.opts)},
        {"version", ctx.opts.version},
        {"llama_commit", ctx.opts.llama_commit},
    };
    return json_ok(out);
}

http_response metadata(api_context & ctx) {
    json served = json::array(), info = json::array(), loaded = json::array();
    for (const auto & e : ctx.models.catalog().list()) {
        served.push_back(e.name);
        info.push_back({{"shortName", e.name}, {"sizeBytes", e.size_bytes}});  // NIM's modelInfo entries
    }
    for (const auto & l : ctx.models.loaded()) loaded.push_back(l.name);
    return json_ok({{"version", ctx.opts.version},
                    {"api", "v1"},
                    {"build", {{"version", ctx.opts.version}, {"llama_commit", ctx.opts.llama_commit}, {"build_info", build_string(ctx.opts)}}},
                    {"modelInfo", info},
                    {"served_models", served},
                    {"loaded_models", loaded}});
}

}  // namespace

std::vector<route> server_routes(api_context & ctx) {
    return {
        {"GET", "/v1/metadata", [&ctx](const http_request &) { return metadata(ctx); }},
        {"POST", "/tokenize", [&ctx](const http_request & req) { return tokenize(ctx, req); }},
        {"POST", "/detokenize", [&ctx](const http_request & req) { return detokenize(ctx, req); }},
        {"POST", "/apply-template", [&ctx](const http_request & req) { return apply_template(ctx, req); }},
        {"POST", "/v1/kv/prefetch", [&ctx](const http_request & req) { return prefetch(ctx, req); }},
        {"GET", "/props", [&ctx](const http_request & req) { return props(ctx, req); }},
    };
}

}  // namespace rc::api
