// Tool-call round trips on the templates that check ids (issue 32): Mistral's demand 9 letters and
// digits, Command-R pairs results with calls; Ollama histories carry no ids at all.
#include <gtest/gtest.h>

#include "api/chat_output.h"
#include "engine/chat_format.h"
#include "tree_templates.h"

using namespace rc;

namespace {

common_chat_tool add_tool() {
    return {"add", "Adds two numbers", R"({"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]})"};
}

// user → assistant calls add (with `id`) → the tool's result (answering `result_id`): the request a
// client sends after running the tool.
std::vector<common_chat_msg> round_trip(const std::string & id, const std::string & result_id) {
    common_chat_msg user, call, result;
    user.role = "user";
    user.content = "What is 2 + 3?";
    call.role = "assistant";
    call.tool_calls.push_back({"add", R"({"a":2,"b":3})", id});
    result.role = "tool";
    result.content = "5";
    result.tool_call_id = result_id;
    result.tool_name = result_id.empty() ? "add" : "";
    return {user, call, result};
}

result<engine::chat_prompt> render(const llama::model & m, std::vector<common_chat_msg> messages) {
    engine::chat_input in;
    in.messages = std::move(messages);
    in.tools = {add_tool()};
    return engine::render_chat(m, in);
}

}  // namespace

TEST(tool_call_ids, our_own_and_foreign_ids_round_trip_on_mistral_templates) {
    for (const char * file : {"mistralai-Mistral-Nemo-Instruct-2407.jinja", "Mistral-Small-3.2-24B-Instruct-2506.jinja"}) {
        auto m = test::with_template(file);
        ASSERT_TRUE(m);
        // An id as OpenAI (and this server, for other families) makes them: the template would raise.
        auto r = render(*m, round_trip("call_6wHn2Xq0ZpL1aBcD3eFgH4iJ", "call_6wHn2Xq0ZpL1aBcD3eFgH4iJ"));
        ASSERT_TRUE(r.ok()) << file << ": " << r.err().message;
        EXPECT_EQ(r->tool_ids, engine::tool_id_style::nine_alnum);
        // An Ollama history: no ids anywhere.
        auto o = render(*m, round_trip("", ""));
        EXPECT_TRUE(o.ok()) << file << ": " << (o.ok() ? "" : o.err().message);
    }
}

TEST(tool_call_ids, a_command_r_history_with_tool_name_but_no_id_renders) {
    auto m = test::with_template("CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja");
    ASSERT_TRUE(m);
    auto r = render(*m, round_trip("", ""));
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.err().message);
}

TEST(tool_call_ids, a_generated_call_gets_an_id_its_template_accepts_and_it_renders_back) {
    auto m = test::with_template("mistralai-Mistral-Nemo-Instruct-2407.jinja");
    ASSERT_TRUE(m);
    common_chat_msg user;
    user.role = "user";
    user.content = "What is 2 + 3?";
    engine::chat_input in;
    in.messages = {user};
    in.tools = {add_tool()};
    in.tool_choice = COMMON_CHAT_TOOL_CHOICE_REQUIRED;
    auto r = engine::render_chat(*m, in);
    ASSERT_TRUE(r.ok()) << r.err().message;
    api::chat_output_parser p(r->parser, r->tool_ids);
    // What the template's grammar lets through when the model writes no id (llama.cpp's grammar
    // keeps the comma before the optional "id").
    p.append(R"([TOOL_CALLS][{"name": "add", "arguments": {"a": 2, "b": 3}, }])");
    p.finish();
    const auto & reply = p.message();
    ASSERT_EQ(reply.tool_calls.size(), 1u) << reply.content;
    EXPECT_TRUE(engine::tool_id_fits(reply.tool_calls[0].id, engine::tool_id_style::nine_alnum)) << reply.tool_calls[0].id;
    // The client sends the call back with its result: the template takes it as it is.
    auto back = render(*m, round_trip(reply.tool_calls[0].id, reply.tool_calls[0].id));
    ASSERT_TRUE(back.ok()) << back.err().message;
    EXPECT_NE(back->text.find(reply.tool_calls[0].id), std::string::npos) << "kept, not mapped";
}
