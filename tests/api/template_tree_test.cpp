// Every chat template in the pinned llama.cpp tree (models/templates/, 69 families and versions) on a
// generated model: what a request asks for is what the sampler will enforce, or a 400 that says so.
//   * tool_choice required: a strict grammar whose root lets nothing but a reasoning block come before
//     the call, with thinking on or off; else a 400 naming tool_choice;
//   * response_format alone: always a strict grammar;
//   * response_format with tools: strict, or a 400 naming response_format;
//   * every grammar starts a sampler, fed the template's generation prompt (Kimi-K2's did not: issue 32).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "engine/chat_format.h"
#include "engine/sampler.h"
#include "api/chat_output.h"
#include "tree_templates.h"

using namespace rc;

namespace {

std::vector<std::string> tree_templates() {
    std::vector<std::string> files;
    for (const auto & e : std::filesystem::directory_iterator(RC_LLAMA_TEMPLATES_DIR))
        if (e.path().extension() == ".jinja") files.push_back(e.path().filename());
    std::sort(files.begin(), files.end());
    return files;
}

const common_chat_tool weather{"get_weather", "Weather in a city",
                               R"({"type":"object","properties":{"city":{"type":"string","enum":["Paris","Oslo"]}},"required":["city"]})"};
const char * schema = R"({"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]})";

std::string root_rule(const std::string & gbnf) {
    size_t at = gbnf.rfind("root ::=", 0) == 0 ? 0 : gbnf.find("\nroot ::=") + 1;
    return gbnf.substr(at, gbnf.find('\n', at) - at);
}

bool has_reasoning_marker(std::string root) {
    std::transform(root.begin(), root.end(), root.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return root.find("think") != std::string::npos || root.find("begin_assistant") != std::string::npos;
}

class every_template : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(every_template, enforces_what_is_asked_or_says_why_not) {
    auto m = test::with_template(GetParam());
    ASSERT_TRUE(m);
    common_chat_msg user;
    user.role = "user";
    user.content = "Weather in Paris?";
    auto render = [&](auto setup) {
        engine::chat_input in;
        in.messages = {user};
        setup(in);
        return engine::render_chat(*m, in, "family");
    };
    auto starts_a_sampler = [&](const engine::chat_prompt & p) {
        auto s = engine::make_sampler(*m, engine::sampling_params{}, p.grammar);
        EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.err().message);
    };

    auto plain = render([](auto &) {});
    ASSERT_TRUE(plain.ok()) << plain.err().message;

    for (bool thinking : {true, false}) {
        auto r = render([&](engine::chat_input & in) {
            in.tools = {weather};
            in.tool_choice = COMMON_CHAT_TOOL_CHOICE_REQUIRED;
            in.enable_thinking = thinking;
        });
        if (!r.ok()) {
            EXPECT_EQ(r.err().message.rfind("tool_choice \"required\"", 0), 0u) << r.err().message;
            EXPECT_NE(r.err().message.find("'family'"), std::string::npos) << "names the model";
            continue;
        }
        EXPECT_FALSE(r->grammar.grammar.empty());
        EXPECT_FALSE(r->grammar.lazy) << "a lazy grammar lets free text through";
        const auto root = root_rule(r->grammar.grammar);
        // Gemma 4 with thinking off keeps its repeated messages: its prompt holds a closed thought block.
        if (thinking || GetParam().find("gemma-4") == std::string::npos) {
            EXPECT_EQ(root.find('*'), std::string::npos) << root;
        }
        if (root.find("until-") != std::string::npos) {
            EXPECT_TRUE(has_reasoning_marker(root)) << "free text before the call: " << root;
        }
        starts_a_sampler(*r);
    }

    auto s = render([&](engine::chat_input & in) { in.json_schema = schema; });
    ASSERT_TRUE(s.ok()) << s.err().message;
    EXPECT_FALSE(s->grammar.grammar.empty() || s->grammar.lazy);
    starts_a_sampler(*s);

    auto st = render([&](engine::chat_input & in) {
        in.tools = {weather};
        in.json_schema = schema;
    });
    if (st.ok()) {
        EXPECT_FALSE(st->grammar.grammar.empty() || st->grammar.lazy);
        starts_a_sampler(*st);
    } else {
        EXPECT_EQ(st.err().message.rfind("response_format", 0), 0u) << st.err().message;
    }
}

INSTANTIATE_TEST_SUITE_P(pinned_tree, every_template, ::testing::ValuesIn(tree_templates()), [](const auto & p) {
    std::string n = p.param.substr(0, p.param.size() - 6);
    std::replace_if(n.begin(), n.end(), [](char c) { return !std::isalnum((unsigned char)c); }, '_');
    return n;
});

// Issue 32, finding 5: a reply cut at max_tokens inside a tool call or a reasoning block keeps
// what was generated.
namespace {

common_chat_msg cut_reply(const std::string & file, const std::string & text, bool tools, bool cut = true) {
    auto m = test::with_template(file);
    common_chat_msg user;
    user.role = "user";
    user.content = "Weather in Paris?";
    engine::chat_input in;
    in.messages = {user};
    if (tools) in.tools = {weather};
    auto r = engine::render_chat(*m, in);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.err().message);
    api::chat_output_parser p(r->parser, r->tool_ids);
    p.append(text);
    p.finish(cut);
    return p.message();
}

}  // namespace

TEST(cut_at_length, an_unfinished_tool_call_is_returned_as_text_not_as_a_broken_call) {
    const std::string call = R"(<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Pa)";
    auto msg = cut_reply("openai-gpt-oss-120b.jinja", call, true);
    EXPECT_TRUE(msg.tool_calls.empty()) << msg.tool_calls[0].arguments;
    EXPECT_EQ(msg.content, call);
    // Finished, the same call is a call.
    auto done = cut_reply("openai-gpt-oss-120b.jinja", call + R"(ris"})", true, false);
    ASSERT_EQ(done.tool_calls.size(), 1u);
    EXPECT_EQ(done.tool_calls[0].name, "get_weather");
}

TEST(cut_at_length, reasoning_and_text_that_match_no_format_are_kept) {
    auto r1 = cut_reply("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", "Some reasoning that never clo", false);
    EXPECT_NE(r1.reasoning_content.find("Some reasoning that never clo"), std::string::npos);
    auto oss = cut_reply("openai-gpt-oss-120b.jinja", "<|channel|>analysis<|message|>The user asks about", true);
    EXPECT_EQ(oss.reasoning_content, "The user asks about");
    auto raw = cut_reply("openai-gpt-oss-120b.jinja", "words without any channel", true);
    EXPECT_EQ(raw.content, "words without any channel");
    // Reasoning then an unfinished call: the reasoning stays reasoning, the call's text is content.
    auto both = cut_reply("Qwen-Qwen3-0.6B.jinja", "<think>\nhm\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"argu", true);
    EXPECT_EQ(both.reasoning_content.rfind("hm", 0), 0u) << both.reasoning_content;
    EXPECT_TRUE(both.tool_calls.empty());
    EXPECT_NE(both.content.find("<tool_call>"), std::string::npos) << both.content;
}

TEST(forced_calls, a_tool_schema_over_the_grammar_limits_is_refused_by_the_sampler_with_its_reason) {
    // The forced-call rewrite parses the template's grammar; one over the limits (a client's huge
    // enum) is left to the sampler's cost check, which says why.
    auto m = test::with_template("Qwen-Qwen2.5-7B-Instruct.jinja");
    ASSERT_TRUE(m);
    nlohmann::json cities = nlohmann::json::array();
    for (int i = 0; i < 3000; ++i) cities.push_back("city" + std::to_string(i));
    nlohmann::json params = {{"type", "object"}, {"properties", {{"city", {{"type", "string"}, {"enum", cities}}}}}, {"required", {"city"}}};
    common_chat_msg user;
    user.role = "user";
    user.content = "Weather?";
    engine::chat_input in;
    in.messages = {user};
    in.tools = {common_chat_tool{"get_weather", "Weather", params.dump()}};
    in.tool_choice = COMMON_CHAT_TOOL_CHOICE_REQUIRED;
    auto r = engine::render_chat(*m, in);
    ASSERT_TRUE(r.ok()) << r.err().message;
    auto s = engine::make_sampler(*m, engine::sampling_params{}, r->grammar);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.err().message.find("alternatives"), std::string::npos) << s.err().message;
}
