// POST /api/generate — a prompt, rendered as a user turn through the model's own chat template
// (with `system`), or tokenized as is with raw:true; `context` (token ids of an earlier reply)
// continues from there. An empty prompt loads the model (done_reason "load"), or with keep_alive 0
// unloads it ("unload").
//
// `template` (a Go-template override) is refused with a 400 rather than ignored: this server renders
// Jinja chat templates, and silently dropping an override would change the prompt behind the
// client's back. raw:true with a pre-formatted prompt does the same job.
#include "http/api_error.h"
#include "api/generation_session.h"
#include "api/ollama/keep_alive.h"
#include "api/ollama/ollama_options.h"
#include "api/ollama/ollama_routes.h"
#include "api/ollama/ollama_stream.h"
#include "api/reasoning_controls.h"

namespace rc::api::ollama {
using namespace rc::http;  // written against the HTTP shell (src/http)

namespace {

std::vector<int32_t> read_context(const json & body) {
    auto it = body.find("context");
    if (it == body.end() || it->is_null()) return {};
    return read_token_ids(*it, "context");
}

common_chat_msg message(const char * role, const std::string & content) {
    common_chat_msg m;
    m.role = role;
    m.content = content;
    return m;
}

void refuse_unsupported(const json & body) {
    if (auto s = opt_string(body, "suffix"); s && !s->empty())
        bad_request("'suffix' (fill-in-the-middle) is not supported", "suffix");
    if (auto t = opt_string(body, "template"); t && !t->empty())
        bad_request("'template' overrides are not supported: the model's own chat template is used; send raw:true with a "
                    "prompt you formatted instead",
                    "template");
    if (auto it = body.find("images"); it != body.end() && !it->is_null()) {
        if (!it->is_array()) bad_request("'images' must be an array", "images");
        if (!it->empty()) bad_request("'images' are not supported: no vision models are served", "images");
    }
}

}  // namespace

bool read_generate_request(const models::model_entry & entry, json & body, generation_input & in) {
    in.task = "generate";
    in.prompt_field = "prompt";
    in.schema_field = "format";
    refuse_unsupported(body);
    auto model_system = apply_model_defaults(entry, body);
    std::string prompt = opt_string(body, "prompt").value_or("");
    bool raw = read_bool(body, "raw", false);
    std::string system = opt_string(body, "system").value_or(raw ? "" : model_system.value_or(""));
    if (raw && !system.empty()) bad_request("raw mode does not support 'system': put it in the prompt", "system");
    std::string format = read_format(body);
    auto think = read_think(body);
    in.context = read_context(body);
    if (prompt.empty()) return false;
    if (raw) {
        // Tokenized as is, special-token text included; raw output is never parsed.
        in.prompts.push_back(prompt_input::of_text(std::move(prompt)));
        in.parse_special = true;
        in.output_schema = std::move(format);
    } else {
        engine::chat_input chat;
        if (!system.empty()) chat.messages.push_back(message("system", system));
        chat.messages.push_back(message("user", prompt));
        chat.json_schema = std::move(format);
        chat.enable_thinking = think.value_or(true);
        read_ollama_think_level(body, chat);
        in.think = think.value_or(false);
        in.chat = std::move(chat);
    }
    return true;
}

namespace {

http_response handle(api_context & ctx, const http_request & req) {
    const auto started = steady::now();
    json body = parse_body(req);
    generation_input in;
    in.model = model_field(body);
    const auto entry = find_model(ctx, in.model);
    const bool has_prompt = read_generate_request(entry, body, in);
    in.stream = read_bool(body, "stream", true);
    auto keep_alive = read_keep_alive(body);
    read_options(body, ctx, in.params);
    in.params.logprobs_top = read_logprobs(body);

    if (!has_prompt) return load_or_unload(ctx, entry, in.model, keep_alive, json{{"response", ""}});
    in.keep_alive = keep_alive_or_default(ctx, keep_alive);
    reply_options o{reply_shape::generate, in.model, started, in.params.logprobs_top >= 0};
    return respond(generation_session::start(ctx, entry, std::move(in), req.client_gone), std::move(o), req);
}

}  // namespace

route generate_route(api_context & ctx) {
    return {"POST", "/api/generate", [&ctx](const http_request & req) { return handle(ctx, req); }};
}

}  // namespace rc::api::ollama
