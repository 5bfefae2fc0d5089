// POST /api/chat — messages (and tools) through the model's own chat template, as llama-server
// renders them; the reply is parsed back into content, thinking and tool calls (arguments as JSON
// objects). Streamed lines carry content and thinking deltas; tool calls arrive whole, in one line
// once the reply is complete, as Ollama sends them. Empty messages load the model (done_reason
// "load"), or with keep_alive 0 unload it ("unload").
#include <algorithm>

#include "api/api_error.h"
#include "api/ollama/chat_messages.h"
#include "api/ollama/keep_alive.h"
#include "api/ollama/model_facts.h"
#include "api/ollama/ollama_options.h"
#include "api/ollama/ollama_routes.h"
#include "api/ollama/ollama_stream.h"
#include "engine/chat_format.h"

namespace rc::api::ollama {

namespace {

http_response handle(api_context & ctx, const http_request & req) {
    auto started = steady::now();
    json body = parse_body(req);
    std::string name = model_field(body);
    auto model_system = apply_model_defaults(ctx, name, body);
    engine::chat_input in;
    in.messages = read_messages(body);
    bool has_system = std::any_of(in.messages.begin(), in.messages.end(), [](const auto & m) { return m.role == "system"; });
    if (model_system && !has_system && !in.messages.empty()) {
        common_chat_msg sys;
        sys.role = "system";
        sys.content = *model_system;
        in.messages.insert(in.messages.begin(), sys);
    }
    in.tools = read_tools(body);
    in.parallel_tool_calls = true;  // Ollama returns every call the model makes
    in.json_schema = read_format(body);
    auto think = read_think(body);
    bool stream = read_bool(body, "stream", true);
    auto keep_alive = read_keep_alive(body);
    engine::generation_request greq;
    read_options(body, ctx, greq);
    greq.logprobs_top = read_logprobs(body);

    if (in.messages.empty()) return load_or_unload(ctx, name, keep_alive, json{{"message", {{"role", "assistant"}, {"content", ""}}}});

    auto a = acquire(ctx, name, keep_alive);
    auto job = std::make_shared<generation_job>();  // from here keep_alive 0 unloads even on a 4xx
    job->ctx = &ctx;
    job->shape = reply_shape::chat;
    job->model = name;
    job->keep_alive = keep_alive;
    job->eng = a.eng;
    job->logprobs = greq.logprobs_top >= 0;
    job->started = started;
    job->load_time = a.load_time;

    const auto & m = a.eng->model();
    if (a.eng->is_embedding()) bad_request("\"" + name + "\" does not support chat (it is an embedding model)", "model");
    if (think.value_or(false) && !model_supports_thinking(m)) bad_request("\"" + name + "\" does not support thinking", "think");
    in.enable_thinking = think.value_or(true);
    auto rendered = engine::render_chat(m, in);
    if (!rendered) raise(rendered.err());
    greq.prompt = m.tokenize(rendered->text, true, true);
    greq.grammar = rendered->grammar;
    for (const auto & s : rendered->additional_stops) greq.stop.push_back(s);
    job->parser = rendered->parser;
    job->meter.emplace(*job->ctx, job->model);
    auto ch = a.eng->submit(std::move(greq));
    if (!ch) raise(ch.err());
    job->channel = ch.value();
    return respond(job, stream, req);
}

}  // namespace

route chat_route(api_context & ctx) {
    return {"POST", "/api/chat", [&ctx](const http_request & req) { return handle(ctx, req); }};
}

}  // namespace rc::api::ollama
