// The Responses event mapping fed session events directly: what a client sees for a plain reply, a
// tool call, a cut-off reply, and a failure after the stream began (response.failed, never
// response.completed).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

#include "api/openai/responses_stream.h"

using namespace rc::api;
using namespace rc::api::openai;


namespace {

struct sse_event {
    std::string name;
    json data;
};

std::vector<sse_event> parse(const std::string & bytes) {
    std::vector<sse_event> out;
    std::istringstream in(bytes);
    std::string line, name;
    while (std::getline(in, line)) {
        if (line.rfind("event: ", 0) == 0) name = line.substr(7);
        else if (line.rfind("data: ", 0) == 0) out.push_back({name, json::parse(line.substr(6))});
    }
    return out;
}

session_event delta(const std::string & text) {
    session_event e;
    e.delta.content = text;
    return e;
}

session_event done(const common_chat_msg & msg, rc::engine::finish_reason f) {
    session_event e;
    e.kind = session_event::type::done;
    e.message = &msg;
    e.finish = f;
    e.usage.prompt_tokens = 7;
    e.usage.completion_tokens = 3;
    return e;
}

response_echo echo() {
    response_echo e;
    e.model = "demo";
    e.instructions = "Be brief.";
    return e;
}

std::vector<std::string> names(const std::vector<sse_event> & evs) {
    std::vector<std::string> out;
    for (const auto & e : evs) out.push_back(e.name);
    return out;
}

}  // namespace

TEST(responses_stream, a_plain_reply_streams_its_text_and_completes) {
    responses_stream s(echo());
    std::string bytes = s.start();
    bytes += s.on_event(delta("Hel"));
    bytes += s.on_event(delta(""));  // tokens the parser holds back show nothing
    bytes += s.on_event(delta("lo"));
    common_chat_msg msg;
    msg.role = "assistant";
    msg.content = "Hello";
    bytes += s.on_event(done(msg, rc::engine::finish_reason::stop));
    bytes += s.finish();
    auto evs = parse(bytes);
    EXPECT_EQ(names(evs), (std::vector<std::string>{"response.created", "response.in_progress", "response.output_item.added",
                                                    "response.content_part.added", "response.output_text.delta", "response.output_text.delta",
                                                    "response.output_text.done", "response.content_part.done", "response.output_item.done",
                                                    "response.completed"}));
    for (size_t i = 0; i < evs.size(); ++i) {
        EXPECT_EQ(evs[i].data["sequence_number"], i);
        EXPECT_EQ(evs[i].data["type"], evs[i].name);
    }
    EXPECT_EQ(evs[4].data["delta"], "Hel");
    EXPECT_EQ(evs[6].data["text"], "Hello");
    const json & r = evs.back().data["response"];
    EXPECT_EQ(r["status"], "completed");
    EXPECT_EQ(r["model"], "demo");
    EXPECT_EQ(r["instructions"], "Be brief.");
    EXPECT_EQ(r["usage"]["input_tokens"], 7);
    EXPECT_EQ(r["usage"]["output_tokens"], 3);
    EXPECT_EQ(r["output"][0]["content"][0]["text"], "Hello");
    EXPECT_TRUE(r["error"].is_null());
}

TEST(responses_stream, tool_calls_come_whole_at_the_end) {
    responses_stream s(echo());
    std::string bytes = s.start();
    session_event call_fragment;
    call_fragment.delta.tool_calls.push_back({0, "call_1", "get_weather", "{\"ci"});
    bytes += s.on_event(call_fragment);
    common_chat_msg msg;
    msg.role = "assistant";
    msg.tool_calls.push_back({"get_weather", "{\"city\":\"Paris\"}", "call_1"});
    bytes += s.on_event(done(msg, rc::engine::finish_reason::stop));
    bytes += s.finish();
    auto evs = parse(bytes);
    EXPECT_EQ(names(evs), (std::vector<std::string>{"response.created", "response.in_progress", "response.output_item.added",
                                                    "response.function_call_arguments.done", "response.output_item.done", "response.completed"}));
    const json & item = evs[2].data["item"];
    EXPECT_EQ(item["type"], "function_call");
    EXPECT_EQ(item["call_id"], "call_1");
    EXPECT_EQ(item["name"], "get_weather");
    EXPECT_EQ(item["arguments"], "{\"city\":\"Paris\"}");
    EXPECT_EQ(evs.back().data["response"]["output"].size(), 1u);
}

TEST(responses_stream, a_cut_off_reply_is_incomplete) {
    responses_stream s(echo());
    std::string bytes = s.start();
    bytes += s.on_event(delta("Once"));
    common_chat_msg msg;
    msg.content = "Once";
    bytes += s.on_event(done(msg, rc::engine::finish_reason::length));
    bytes += s.finish();
    auto evs = parse(bytes);
    EXPECT_EQ(evs.back().name, "response.incomplete");
    EXPECT_EQ(evs.back().data["response"]["incomplete_details"]["reason"], "max_output_tokens");
}

TEST(responses_stream, an_error_mid_stream_fails_the_response) {
    responses_stream s(echo());
    std::string bytes = s.start();
    bytes += s.on_event(delta("Par"));
    EXPECT_FALSE(s.failed());
    session_event err;
    err.kind = session_event::type::error;
    err.error = rc::make_error(rc::errc::unavailable, "the model was unloaded while the request was running");
    bytes += s.on_event(err);
    EXPECT_TRUE(s.failed()) << "the route stops the stream here: no finish(), no response.completed";
    auto evs = parse(bytes);
    ASSERT_FALSE(evs.empty());
    EXPECT_EQ(evs.back().name, "response.failed");
    const json & r = evs.back().data["response"];
    EXPECT_EQ(r["status"], "failed");
    EXPECT_EQ(r["error"]["code"], "unavailable");
    EXPECT_EQ(r["error"]["message"], "the model was unloaded while the request was running");
    for (const auto & e : evs) EXPECT_NE(e.name, "response.completed");
}

TEST(responses_stream, the_whole_object_matches_the_stream) {
    common_chat_msg msg;
    msg.content = "Hi";
    msg.tool_calls.push_back({"f", "{}", "call_9"});
    rc::engine::usage_stats u;
    u.prompt_tokens = 4;
    u.completion_tokens = 2;
    json r = response_json(echo(), rc::engine::finish_reason::stop, msg, u);
    EXPECT_EQ(r["object"], "response");
    EXPECT_EQ(r["status"], "completed");
    ASSERT_EQ(r["output"].size(), 2u);
    EXPECT_EQ(r["output"][0]["content"][0]["text"], "Hi");
    EXPECT_EQ(r["output"][1]["call_id"], "call_9");
    EXPECT_EQ(r["usage"]["total_tokens"], 6);
}
