#pragma once
// The replies of /api/generate and /api/chat, shaped from a generation_session's events: an NDJSON
// stream (application/x-ndjson, one object per line) of partial results ending in a done:true line
// with done_reason and Ollama's timing fields, or one whole object when stream is false. Content
// and thinking stream as they extend; tool calls arrive whole, in one line once the reply is
// complete, as Ollama sends them. An engine error mid-stream is a line {"error": "..."}; a stream
// silent for a while (a long prefill, a long tool call) gets an empty chunk line as keep-alive.
#include <chat.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "api/generation_session.h"
#include "http/json_fields.h"
#include "api/ollama/ollama_common.h"

namespace rc::api::ollama {
using namespace rc::http;  // written against the HTTP shell (src/http)

enum class reply_shape { generate, chat };

struct reply_options {
    reply_shape shape = reply_shape::generate;
    std::string model;  // as the client named it; echoed in every line
    steady::time_point started;
    bool logprobs = false;
};

http_response respond(std::shared_ptr<generation_session> s, reply_options o, const http_request & req);

// Tool calls in Ollama's shape: {id, function:{index, name, arguments:{…object…}}}.
json tool_calls_json(const std::vector<common_chat_tool_call> & calls);
// Ollama's logprobs entries: {token, logprob, bytes, top_logprobs:[{token, logprob, bytes}]}.
json logprobs_json(const std::vector<engine::token_choice> & tokens);

}  // namespace rc::api::ollama
