#pragma once
// The replies of /api/generate and /api/chat: an NDJSON stream (application/x-ndjson, one object per
// line, flushed per event) of partial results ending in a done:true line with done_reason and
// Ollama's timing fields, or one whole object when stream is false. An engine error mid-stream is a
// line {"error": "..."}.
#include <chat.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/api_context.h"
#include "api/generation_pump.h"
#include "api/json_fields.h"
#include "api/ollama/ollama_common.h"
#include "engine/engine.h"

namespace rc::api::ollama {

struct output_delta {
    std::string content;
    std::string thinking;
    bool empty() const { return content.empty() && thinking.empty(); }
};

// Splits generated text into visible content and reasoning with the chat template's parser,
// incrementally while streaming; with no parser (raw prompts) text passes through as content.
// Each delta extends what was already sent; should the parser revise text it had shown (it holds
// back possible markup, so this is rare), that field pauses until it extends the sent text again —
// streamed pieces always add up to a prefix of the final parse. Tool calls are only read from the
// final parse (Ollama sends each call whole).
class output_splitter {
  public:
    explicit output_splitter(std::optional<common_chat_parser_params> parser) : parser_(std::move(parser)) {}
    output_delta feed(const std::string & piece);
    output_delta finish();
    // After finish(): the whole reply (content, reasoning_content, tool_calls).
    const common_chat_msg & message() const { return msg_; }

  private:
    output_delta advance(common_chat_msg next);

    std::optional<common_chat_parser_params> parser_;
    std::string text_;
    common_chat_msg msg_;
    std::string sent_content_;
    std::string sent_thinking_;
};

enum class reply_shape { generate, chat };

// One submitted generation and what its reply needs. Destroying it (after the reply, or when the
// client left) cancels unfinished work and applies keep_alive 0.
struct generation_job {
    api_context * ctx = nullptr;
    reply_shape shape = reply_shape::generate;
    std::string model;  // as the client named it; echoed in every line
    std::optional<std::chrono::nanoseconds> keep_alive;
    std::shared_ptr<engine::engine> eng;
    std::shared_ptr<engine::request_channel> channel;
    std::optional<common_chat_parser_params> parser;  // none: raw output
    bool logprobs = false;
    std::vector<llama_token> prompt;  // generate: the start of the returned `context`
    steady::time_point started;
    std::chrono::nanoseconds load_time{0};
    std::optional<generation_meter> meter;  // started right before the submit

    ~generation_job();
};

http_response respond(const std::shared_ptr<generation_job> & job, bool stream, const http_request & req);

// Tool calls in Ollama's shape: {id, function:{index, name, arguments:{…object…}}}.
json tool_calls_json(const std::vector<common_chat_tool_call> & calls);
// Ollama's logprobs entries: {token, logprob, bytes, top_logprobs:[{token, logprob, bytes}]}.
json logprobs_json(const std::vector<engine::token_choice> & tokens);

}  // namespace rc::api::ollama
