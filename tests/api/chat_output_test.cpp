// The one chat-output parser with tiny-chat's real template parser (Qwen2.5: <tool_call> JSON):
// what streams adds up to the final parse, bytes that are not UTF-8 do not stop the stream, tool
// calls are announced once with a stable id.
#include <gtest/gtest.h>

#include "api/chat_output.h"
#include "http/json_fields.h"
#include "engine/chat_format.h"
#include "test_models.h"

using namespace rc;
using rc::api::chat_output_parser;
using rc::api::output_delta;

namespace {

common_chat_parser_params parser_for(bool with_tools) {
    auto m = test::shared_model("tiny-chat");
    EXPECT_TRUE(m);
    engine::chat_input in;
    common_chat_msg user;
    user.role = "user";
    user.content = "Weather in Paris?";
    in.messages.push_back(user);
    if (with_tools) {
        common_chat_tool tool;
        tool.name = "get_weather";
        tool.parameters = R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})";
        in.tools.push_back(tool);
    }
    auto p = engine::render_chat(*m, in);
    EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.err().message);
    return p->parser;
}

struct streamed {
    std::string content;
    std::vector<output_delta> deltas;
};

streamed feed_all(chat_output_parser & p, const std::vector<std::string> & pieces) {
    streamed s;
    for (const auto & piece : pieces) {
        s.deltas.push_back(p.feed(piece));
        s.content += s.deltas.back().content;
    }
    s.deltas.push_back(p.finish());
    s.content += s.deltas.back().content;
    return s;
}

}  // namespace

TEST(chat_output, streamed_content_adds_up_to_the_final_parse) {
    chat_output_parser p(parser_for(false));
    auto s = feed_all(p, {"Hel", "lo", " there", "."});
    EXPECT_EQ(s.content, "Hello there.");
    EXPECT_EQ(p.message().content, "Hello there.");
    EXPECT_EQ(p.message().role, "assistant");
    EXPECT_FALSE(s.deltas[0].content.empty()) << "plain text is shown as it comes";
}

TEST(chat_output, invalid_utf8_does_not_silence_the_stream) {
    // A byte-level tokenizer can emit a lone continuation byte. The template's parser needs valid
    // UTF-8: before, every partial parse after such a byte failed and nothing streamed until the end.
    chat_output_parser p(parser_for(false));
    auto s = feed_all(p, {"Hello ", "\x80", " world", " and", "\xFF", " more"});
    EXPECT_FALSE(s.deltas[2].content.empty()) << "text after the bad byte streams at once";
    EXPECT_FALSE(s.deltas[3].content.empty());
    EXPECT_FALSE(s.deltas[5].content.empty());
    EXPECT_EQ(s.content, "Hello \xEF\xBF\xBD world and\xEF\xBF\xBD more") << "bad bytes read as U+FFFD, as the JSON writer sends them";
    EXPECT_EQ(p.message().content, s.content);
}

TEST(chat_output, a_code_point_split_across_pieces_waits_for_its_rest) {
    chat_output_parser p(parser_for(false));
    auto s = feed_all(p, {"caf", "\xC3", "\xA9", " ok"});
    EXPECT_EQ(s.content, "caf\xC3\xA9 ok") << "no replacement character for a sequence that completes";
    chat_output_parser cut(parser_for(false));
    auto t = feed_all(cut, {"ab", "\xE2\x82"});
    EXPECT_EQ(t.content, "ab\xEF\xBF\xBD") << "a sequence the reply never completes ends as U+FFFD";
}

TEST(chat_output, tool_calls_are_announced_once_with_a_stable_id) {
    chat_output_parser p(parser_for(true));
    std::string reply = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
    std::vector<std::string> pieces;
    for (size_t i = 0; i < reply.size(); i += 3) pieces.push_back(reply.substr(i, 3));
    auto s = feed_all(p, pieces);
    std::string id, name, args;
    int announcements = 0;
    for (const auto & d : s.deltas) {
        for (const auto & tc : d.tool_calls) {
            EXPECT_EQ(tc.index, 0u);
            if (!tc.id.empty()) {
                ++announcements;
                id = tc.id;
                name = tc.name;
            }
            args += tc.arguments;
        }
    }
    EXPECT_EQ(announcements, 1);
    EXPECT_EQ(name, "get_weather");
    EXPECT_EQ(id.rfind("call_", 0), 0u) << id;
    EXPECT_EQ(id.size(), 29u) << "call_ and 24 characters, in both dialects";
    ASSERT_EQ(p.message().tool_calls.size(), 1u);
    EXPECT_EQ(p.message().tool_calls[0].id, id) << "the final message keeps the streamed id";
    EXPECT_EQ(rc::http::json::parse(args), rc::http::json::parse(p.message().tool_calls[0].arguments));
    EXPECT_EQ(s.content.find("tool_call"), std::string::npos) << "call markup is not content";
}

TEST(chat_output, not_streaming_parses_once_at_the_end_with_the_same_result) {
    chat_output_parser streaming(parser_for(false)), whole(parser_for(false));
    for (const char * piece : {"One", " \x80", "two"}) {
        streaming.feed(piece);
        whole.append(piece);
    }
    streaming.finish();
    EXPECT_TRUE(whole.finish().content == whole.message().content);
    EXPECT_EQ(whole.message().content, streaming.message().content);
}

TEST(chat_output, raw_output_passes_through_untouched) {
    chat_output_parser raw(std::nullopt);
    EXPECT_EQ(raw.feed("<tool_call>").content, "<tool_call>");
    EXPECT_EQ(raw.feed("\x80").content, "\x80") << "raw bytes stay raw; the JSON writer replaces them";
    raw.finish();
    EXPECT_EQ(raw.message().content, "<tool_call>\x80");
    EXPECT_TRUE(raw.message().tool_calls.empty());
}
