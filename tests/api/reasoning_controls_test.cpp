// Issue 32's reasoning controls: what a request's chat_template_kwargs, reasoning_effort,
// reasoning_format and Ollama `think` levels set, the 400s for bad values, and — with real templates
// from the pinned llama.cpp tree on a generated model — that the rendered prompt changes as each
// template says it should.
#include <gtest/gtest.h>

#include "http/api_error.h"
#include "api/reasoning_controls.h"
#include "engine/chat_format.h"
#include "tree_templates.h"

using namespace rc;
using namespace rc::api;
using namespace rc::http;

namespace {

engine::chat_input read(const std::string & body) {
    engine::chat_input in;
    read_reasoning_controls(json::parse(body), in);
    return in;
}

std::string bad_field(const std::string & body) {
    try {
        read(body);
    } catch (const api_error & e) {
        EXPECT_EQ(e.status, 400);
        return e.param;
    }
    return "(accepted)";
}

std::string render(const llama::model & m, engine::chat_input in) {
    common_chat_msg sys, user;
    sys.role = "system";
    sys.content = "You are terse.";
    user.role = "user";
    user.content = "Hello there";
    in.messages = {sys, user};
    auto r = engine::render_chat(m, in);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.err().message);
    return r.ok() ? r->text : "";
}

}  // namespace

TEST(reasoning_controls, each_field_reaches_the_chat_input) {
    auto in = read(R"({"chat_template_kwargs": {"enable_thinking": false, "custom": {"a": [1, 2]}}})");
    EXPECT_FALSE(in.enable_thinking);
    EXPECT_EQ(in.template_kwargs.at("enable_thinking"), "false");
    EXPECT_EQ(in.template_kwargs.at("custom"), R"({"a":[1,2]})");
    in = read(R"({"reasoning_effort": "low"})");
    EXPECT_TRUE(in.enable_thinking);
    EXPECT_EQ(in.template_kwargs.at("reasoning_effort"), R"("low")");
    in = read(R"({"reasoning_effort": "none"})");
    EXPECT_FALSE(in.enable_thinking);
    EXPECT_FALSE(in.template_kwargs.contains("reasoning_effort"));
    in = read(R"({"reasoning": {"effort": "high"}})");
    EXPECT_EQ(in.template_kwargs.at("reasoning_effort"), R"("high")");
    EXPECT_EQ(read(R"({"reasoning_format": "none"})").reasoning_format, COMMON_REASONING_FORMAT_NONE);
    EXPECT_EQ(read(R"({"reasoning_format": "deepseek"})").reasoning_format, COMMON_REASONING_FORMAT_DEEPSEEK);
    EXPECT_EQ(read("{}").reasoning_format, COMMON_REASONING_FORMAT_AUTO);
    engine::chat_input o;
    read_ollama_think_level(json::parse(R"({"think": "medium"})"), o);
    EXPECT_EQ(o.template_kwargs.at("reasoning_effort"), R"("medium")");
    engine::chat_input b;
    read_ollama_think_level(json::parse(R"({"think": true})"), b);
    EXPECT_TRUE(b.template_kwargs.empty());
}

TEST(reasoning_controls, bad_values_are_a_400_naming_the_field) {
    EXPECT_EQ(bad_field(R"({"chat_template_kwargs": [1]})"), "chat_template_kwargs");
    EXPECT_EQ(bad_field(R"({"chat_template_kwargs": {"enable_thinking": "no"}})"), "chat_template_kwargs.enable_thinking");
    EXPECT_EQ(bad_field(R"({"reasoning_effort": "extreme"})"), "reasoning_effort");
    EXPECT_EQ(bad_field(R"({"reasoning_effort": 3})"), "reasoning_effort");
    EXPECT_EQ(bad_field(R"({"reasoning": {"effort": "lots"}})"), "reasoning.effort");
    EXPECT_EQ(bad_field(R"({"reasoning_format": "xml"})"), "reasoning_format");
    std::string many = R"({"chat_template_kwargs": {)";
    for (size_t i = 0; i <= max_template_kwargs; ++i) many += (i ? "," : "") + std::string("\"v") + std::to_string(i) + "\": 1";
    EXPECT_EQ(bad_field(many + "}}"), "chat_template_kwargs");
    // Round three: a large `messages` here bypassed the prompt's limits (a 30 MB one: 200, +440 MiB).
    const std::string big = json{{"chat_template_kwargs", {{"messages", {{{"role", "user"}, {"content", std::string(100000, 'a')}}}}}}}.dump();
    EXPECT_EQ(bad_field(big), "chat_template_kwargs");
    EXPECT_TRUE(read(json{{"chat_template_kwargs", {{"custom", std::string(60000, 'a')}}}}.dump()).template_kwargs.count("custom")) << "within the bound";
}

// The families whose templates read these variables (the held-out matrix found them ignored).
TEST(reasoning_controls, enable_thinking_false_changes_the_prompt_where_the_template_reads_it) {
    for (const char * file : {"Qwen-Qwen3-0.6B.jinja", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", "GLM-4.6.jinja",
                              "HuggingFaceTB-SmolLM3-3B.jinja", "deepseek-ai-DeepSeek-V3.1.jinja"}) {
        auto m = test::with_template(file);
        ASSERT_TRUE(m) << file;
        const std::string on = render(*m, read("{}"));
        const std::string off = render(*m, read(R"({"chat_template_kwargs": {"enable_thinking": false}})"));
        EXPECT_NE(on, off) << file << ": the kwarg reached the template";
        EXPECT_EQ(off, render(*m, read(R"({"reasoning_effort": "none"})"))) << file << ": reasoning_effort none is the same switch";
    }
}

TEST(reasoning_controls, reasoning_effort_reaches_the_template_as_a_variable) {
    auto m = test::with_template("openai-gpt-oss-120b.jinja");
    ASSERT_TRUE(m);
    const std::string low = render(*m, read(R"({"reasoning_effort": "low"})"));
    const std::string high = render(*m, read(R"({"reasoning_effort": "high"})"));
    EXPECT_NE(low.find("Reasoning: low"), std::string::npos) << low;
    EXPECT_NE(high.find("Reasoning: high"), std::string::npos) << high;
    // Any variable a template reads: gpt-oss's own `reasoning_effort` through chat_template_kwargs.
    EXPECT_NE(render(*m, read(R"({"chat_template_kwargs": {"reasoning_effort": "low"}})")).find("Reasoning: low"), std::string::npos);
}
