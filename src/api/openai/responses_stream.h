#pragma once
// The Responses API's shapes of one generation: the `response` object and, streamed, its events
// (response.created, response.in_progress, response.output_item.added, response.content_part.added,
// response.output_text.delta…, then the closing events and response.completed / .incomplete). A
// choice that fails after the stream began ends it with response.failed (status "failed", `error`
// {code, message}), never with response.completed. Pure mapping: session events in, bytes out.
#include <string>

#include "api/generation_session.h"
#include "http/json_fields.h"

namespace rc::api::openai {
using namespace rc::http;  // written against the HTTP shell (src/http)

// What a response object repeats of its request.
struct response_echo {
    std::string model;
    std::optional<std::string> instructions;
    json tools = json::array();
    json tool_choice = "auto";
    bool parallel_tool_calls = true;
};

// The whole `response` object of a finished reply.
json response_json(const response_echo & echo, engine::finish_reason finish, const common_chat_msg & reply, const engine::usage_stats & usage);

class responses_stream {
  public:
    explicit responses_stream(response_echo echo);

    std::string start();                            // response.created, response.in_progress
    std::string on_event(const session_event & ev); // what `ev` shows ("" for nothing; idle is the caller's)
    std::string fail(const rc::error & err);        // response.failed: the stream is over
    bool failed() const { return failed_; }
    std::string finish();                           // after the done event: closing events, response.completed

  private:
    std::string event(const char * type, json data);

    response_echo echo_;
    std::string id_, msg_id_;
    int seq_ = 0;
    std::string text_;
    bool text_open_ = false;
    bool failed_ = false;
    common_chat_msg reply_;
    engine::finish_reason finish_ = engine::finish_reason::stop;
    engine::usage_stats usage_;
};

}  // namespace rc::api::openai
