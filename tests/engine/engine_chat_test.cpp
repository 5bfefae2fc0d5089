// Chat formatting through the model's own template, constrained output (JSON schema, tool calls)
// and output parsing — all through llama.cpp's common library, on the generated tiny-chat model
// whose random weights would never produce valid JSON unaided.
#include <nlohmann/json.hpp>

#include "engine/chat_format.h"
#include "engine_fixture.h"

using namespace rc;
using namespace rc::test;
using json = nlohmann::json;

namespace {
common_chat_msg user(const std::string & text) {
    common_chat_msg m;
    m.role = "user";
    m.content = text;
    return m;
}

run_result generate(engine::engine & e, const engine::chat_prompt & p, uint32_t seed, int max_tokens) {
    engine::generation_request req;
    req.prompt = e.model().tokenize(p.text, true, true);
    req.grammar = p.grammar;
    req.stop = p.additional_stops;
    req.max_tokens = max_tokens;
    req.sampling.temperature = 0.8f;
    req.sampling.seed = seed;
    return collect(*submit_ok(e, req));
}
}  // namespace

TEST(chat_format, renders_the_models_own_template) {
    auto m = shared_model("tiny-chat");
    ASSERT_TRUE(m);
    engine::chat_input in;
    in.messages = {user("Hi there")};
    auto p = engine::render_chat(*m, in);
    ASSERT_TRUE(p.ok()) << p.err().message;
    EXPECT_NE(p->text.find("<|im_start|>user\nHi there<|im_end|>"), std::string::npos) << p->text;
    EXPECT_TRUE(p->text.ends_with("<|im_start|>assistant\n")) << p->text;
    EXPECT_TRUE(p->grammar.empty());
}

TEST(chat_format, rejects_empty_messages_and_conflicting_constraints) {
    auto m = shared_model("tiny-chat");
    ASSERT_TRUE(m);
    engine::chat_input in;
    EXPECT_EQ(engine::render_chat(*m, in).err().code, errc::invalid_argument);
    in.messages = {user("x")};
    in.grammar = "root ::= \"a\"";
    in.json_schema = R"({"type":"object"})";
    EXPECT_EQ(engine::render_chat(*m, in).err().code, errc::invalid_argument);
    EXPECT_EQ(engine::schema_constraint("{not json").err().code, errc::invalid_argument);
}

TEST(chat_format, json_schema_output_parses_and_validates) {
    auto e = start_engine("tiny-chat");
    ASSERT_TRUE(e);
    engine::chat_input in;
    in.messages = {user("Give me a person as JSON")};
    in.json_schema = R"({"type":"object","properties":{"name":{"type":"string","maxLength":12},
        "age":{"type":"integer","minimum":0,"maximum":150},"tags":{"type":"array","items":{"type":"string","maxLength":8},"maxItems":3}},
        "required":["name","age","tags"],"additionalProperties":false})";
    auto p = engine::render_chat(e->model(), in);
    ASSERT_TRUE(p.ok()) << p.err().message;
    ASSERT_FALSE(p->grammar.empty());
    for (uint32_t seed : {1u, 2u, 3u}) {
        auto r = generate(*e, p.value(), seed, 400);
        ASSERT_EQ(r.done.finish, engine::finish_reason::stop) << "the grammar must close the object; got: " << r.text;
        auto msg = engine::parse_chat_output(r.text, false, p->parser);
        json j = json::parse(msg.content, nullptr, false);
        ASSERT_FALSE(j.is_discarded()) << "not JSON: " << msg.content;
        ASSERT_TRUE(j.is_object());
        EXPECT_EQ(j.size(), 3u);
        ASSERT_TRUE(j["name"].is_string());
        EXPECT_LE(j["name"].get<std::string>().size(), 12u * 4);  // maxLength counts code points
        ASSERT_TRUE(j["age"].is_number_integer());
        EXPECT_GE(j["age"].get<int>(), 0);
        EXPECT_LE(j["age"].get<int>(), 150);
        ASSERT_TRUE(j["tags"].is_array());
        EXPECT_LE(j["tags"].size(), 3u);
    }
}

TEST(chat_format, required_tool_call_is_generated_and_parsed) {
    auto e = start_engine("tiny-chat");
    ASSERT_TRUE(e);
    engine::chat_input in;
    in.messages = {user("What is the weather in Paris?")};
    common_chat_tool tool;
    tool.name = "get_weather";
    tool.description = "Current weather for a city";
    tool.parameters = R"({"type":"object","properties":{"city":{"type":"string","maxLength":16},"unit":{"type":"string","enum":["c","f"]}},"required":["city","unit"]})";
    in.tools = {tool};
    in.tool_choice = COMMON_CHAT_TOOL_CHOICE_REQUIRED;
    auto p = engine::render_chat(e->model(), in);
    ASSERT_TRUE(p.ok()) << p.err().message;
    EXPECT_NE(p->text.find("get_weather"), std::string::npos) << "tools are rendered into the prompt";
    ASSERT_FALSE(p->grammar.empty());
    EXPECT_TRUE(p->parser.parse_tool_calls);

    auto r = generate(*e, p.value(), 7, 300);
    auto msg = engine::parse_chat_output(r.text, false, p->parser);
    // parallel_tool_calls is off: exactly one complete get_weather call.
    ASSERT_EQ(msg.tool_calls.size(), 1u) << "raw output: " << r.text;
    for (const auto & call : msg.tool_calls) {
        EXPECT_EQ(call.name, "get_weather");
        json args = json::parse(call.arguments, nullptr, false);
        ASSERT_TRUE(args.is_object()) << call.arguments;
        EXPECT_TRUE(args["city"].is_string());
        EXPECT_TRUE(args["unit"] == "c" || args["unit"] == "f");
    }
    EXPECT_EQ(msg.content.find_first_not_of(" \t\n"), std::string::npos) << "a required call leaves no room for prose: " << msg.content;

    // Round trip: the assistant's tool call and the tool's answer render into the next prompt.
    common_chat_msg assistant = msg;
    assistant.role = "assistant";
    common_chat_msg tool_reply;
    tool_reply.role = "tool";
    tool_reply.content = R"({"temp": 21})";
    tool_reply.tool_call_id = msg.tool_calls[0].id;
    in.messages = {user("What is the weather in Paris?"), assistant, tool_reply};
    in.tool_choice = COMMON_CHAT_TOOL_CHOICE_AUTO;
    auto next = engine::render_chat(e->model(), in);
    ASSERT_TRUE(next.ok()) << next.err().message;
    EXPECT_NE(next->text.find(R"({"temp": 21})"), std::string::npos) << next->text;
}
