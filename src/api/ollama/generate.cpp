// POST /api/generate — a prompt, rendered as a user turn through the model's own chat template
// (with `system`), or tokenized as is with raw:true; `context` (token ids of an earlier reply)
// continues from there. An empty prompt loads the model (done_reason "load"), or with keep_alive 0
// unloads it ("unload").
//
// `template` (a Go-template override) is refused with a 400 rather than ignored: this server renders
// Jinja chat templates, and silently dropping an override would change the prompt behind the
// client's back. raw:true with a pre-formatted prompt does the same job.
#include "api/api_error.h"
#include "api/ollama/keep_alive.h"
#include "api/ollama/model_facts.h"
#include "api/ollama/ollama_options.h"
#include "api/ollama/ollama_routes.h"
#include "api/ollama/ollama_stream.h"
#include "engine/chat_format.h"

namespace rc::api::ollama {

namespace {

std::vector<llama_token> read_context(const json & body) {
    auto it = body.find("context");
    std::vector<llama_token> out;
    if (it == body.end() || it->is_null()) return out;
    if (!it->is_array()) bad_request("'context' must be an array of token ids", "context");
    for (const auto & t : *it) {
        if (!t.is_number_integer()) bad_request("'context' must be an array of token ids", "context");
        out.push_back(t.get<llama_token>());
    }
    return out;
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

http_response handle(api_context & ctx, const http_request & req) {
    auto started = steady::now();
    json body = parse_body(req);
    std::string name = model_field(body);
    refuse_unsupported(body);
    auto model_system = apply_model_defaults(ctx, name, body);
    std::string prompt = opt_string(body, "prompt").value_or("");
    bool raw_mode = body.contains("raw") && body["raw"].is_boolean() && body["raw"].get<bool>();
    std::string system = opt_string(body, "system").value_or(raw_mode ? "" : model_system.value_or(""));
    bool raw = read_bool(body, "raw", false);
    if (raw && !system.empty()) bad_request("raw mode does not support 'system': put it in the prompt", "system");
    std::string format = read_format(body);
    auto think = read_think(body);
    bool stream = read_bool(body, "stream", true);
    auto keep_alive = read_keep_alive(body);
    auto context = read_context(body);
    engine::generation_request greq;
    read_options(body, ctx, greq);
    greq.logprobs_top = read_logprobs(body);

    if (prompt.empty()) return load_or_unload(ctx, name, keep_alive, json{{"response", ""}});

    auto a = acquire(ctx, name, keep_alive);
    // From here the job owns the request's aftermath: keep_alive 0 unloads even when a check fails.
    auto job = std::make_shared<generation_job>();
    job->ctx = &ctx;
    job->shape = reply_shape::generate;
    job->model = name;
    job->keep_alive = keep_alive;
    job->eng = a.eng;
    job->logprobs = greq.logprobs_top >= 0;
    job->started = started;
    job->load_time = a.load_time;

    const auto & m = a.eng->model();
    if (a.eng->is_embedding()) bad_request("\"" + name + "\" does not support generate (it is an embedding model)", "model");
    for (llama_token t : context) {
        if (!m.valid_token(t)) bad_request("'context' holds token " + std::to_string(t) + ", outside this model's vocabulary", "context");
    }
    // A continued context already holds the BOS token.
    const bool add_special = context.empty();
    std::vector<llama_token> tokens;
    if (raw) {
        tokens = m.tokenize(prompt, add_special, true);
        if (!format.empty()) {
            auto c = engine::schema_constraint(format);
            if (!c) raise(c.err());
            greq.grammar = std::move(c.value());
        }
    } else {
        if (think.value_or(false) && !model_supports_thinking(m)) bad_request("\"" + name + "\" does not support thinking", "think");
        engine::chat_input in;
        if (!system.empty()) in.messages.push_back(message("system", system));
        in.messages.push_back(message("user", prompt));
        in.json_schema = format;
        in.enable_thinking = think.value_or(true);
        auto rendered = engine::render_chat(m, in);
        if (!rendered) raise(rendered.err());
        tokens = m.tokenize(rendered->text, add_special, true);
        greq.grammar = rendered->grammar;
        for (const auto & s : rendered->additional_stops) greq.stop.push_back(s);
        job->parser = rendered->parser;
    }
    greq.prompt = std::move(context);
    greq.prompt.insert(greq.prompt.end(), tokens.begin(), tokens.end());
    job->prompt = greq.prompt;
    job->meter.emplace(*job->ctx, job->model);
    auto ch = a.eng->submit(std::move(greq));
    if (!ch) raise(ch.err());
    job->channel = ch.value();
    return respond(job, stream, req);
}

}  // namespace

route generate_route(api_context & ctx) {
    return {"POST", "/api/generate", [&ctx](const http_request & req) { return handle(ctx, req); }};
}

}  // namespace rc::api::ollama
