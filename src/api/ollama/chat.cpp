// POST /api/chat — messages (and tools) through the model's own chat template, as llama-server
// renders them; the reply is parsed back into content, thinking and tool calls (arguments as JSON
// objects). Streamed lines carry content and thinking deltas; tool calls arrive whole, in one line
// once the reply is complete, as Ollama sends them. Empty messages load the model (done_reason
// "load"), or with keep_alive 0 unload it ("unload").
#include <algorithm>

#include "http/api_error.h"
#include "api/generation_session.h"
#include "api/ollama/chat_messages.h"
#include "api/ollama/keep_alive.h"
#include "api/ollama/ollama_options.h"
#include "api/ollama/ollama_routes.h"
#include "api/ollama/ollama_stream.h"
#include "api/reasoning_controls.h"

namespace rc::api::ollama {
using namespace rc::http;  // written against the HTTP shell (src/http)

void read_chat_request(const models::model_entry & entry, json & body, generation_input & in) {
    auto model_system = apply_model_defaults(entry, body);
    engine::chat_input chat;
    chat.messages = read_messages(body);
    bool has_system = std::any_of(chat.messages.begin(), chat.messages.end(), [](const auto & m) { return m.role == "system"; });
    if (model_system && !has_system && !chat.messages.empty()) {
        common_chat_msg sys;
        sys.role = "system";
        sys.content = *model_system;
        chat.messages.insert(chat.messages.begin(), sys);
    }
    chat.tools = read_tools(body);
    chat.parallel_tool_calls = true;  // Ollama returns every call the model makes
    chat.json_schema = read_format(body);
    auto think = read_think(body);
    chat.enable_thinking = think.value_or(true);
    read_ollama_think_level(body, chat);
    in.think = think.value_or(false);
    in.task = "chat";
    in.prompt_field = "messages";
    in.schema_field = "format";
    in.chat = std::move(chat);
}

namespace {

http_response handle(api_context & ctx, const http_request & req) {
    const auto started = steady::now();
    json body = parse_body(req);
    generation_input in;
    in.model = model_field(body);
    const auto entry = find_model(ctx, in.model);
    read_chat_request(entry, body, in);
    in.stream = read_bool(body, "stream", true);
    auto keep_alive = read_keep_alive(body);
    read_options(body, ctx, in.params);
    in.params.logprobs_top = read_logprobs(body);

    if (in.chat->messages.empty()) return load_or_unload(ctx, entry, in.model, keep_alive, json{{"message", {{"role", "assistant"}, {"content", ""}}}});
    in.keep_alive = keep_alive_or_default(ctx, keep_alive);
    reply_options o{reply_shape::chat, in.model, started, in.params.logprobs_top >= 0};
    return respond(generation_session::start(ctx, entry, std::move(in), req.client_gone), std::move(o), req);
}

}  // namespace

route chat_route(api_context & ctx) {
    return {"POST", "/api/chat", [&ctx](const http_request & req) { return handle(ctx, req); }};
}

}  // namespace rc::api::ollama
