// Tool-call ids in the form each template accepts (issue 32): pure rules, no model.
#include <gtest/gtest.h>

#include <set>

#include "engine/tool_call_ids.h"

using namespace rc::engine;

namespace {

common_chat_msg assistant_calling(std::vector<std::pair<std::string, std::string>> calls) {  // {name, id}
    common_chat_msg m;
    m.role = "assistant";
    for (auto & [name, id] : calls) m.tool_calls.push_back({name, "{}", id});
    return m;
}

common_chat_msg tool_result(std::string id, std::string name = "") {
    common_chat_msg m;
    m.role = "tool";
    m.content = "42";
    m.tool_call_id = std::move(id);
    m.tool_name = std::move(name);
    return m;
}

}  // namespace

TEST(tool_call_ids, the_style_comes_from_the_templates_own_check) {
    EXPECT_EQ(tool_id_style_of(R"({%- if tool_call.id|length != 9 %}{{ raise_exception("...") }})"), tool_id_style::nine_alnum);
    EXPECT_EQ(tool_id_style_of("{{ messages }}"), tool_id_style::any);
    for (int i = 0; i < 50; ++i) {
        EXPECT_TRUE(tool_id_fits(new_tool_call_id(tool_id_style::nine_alnum), tool_id_style::nine_alnum));
        const auto id = new_tool_call_id(tool_id_style::any);
        EXPECT_EQ(id.rfind("call_", 0), 0u);
        EXPECT_EQ(id.size(), 29u);
    }
    EXPECT_FALSE(tool_id_fits("call_abc", tool_id_style::nine_alnum));
    EXPECT_FALSE(tool_id_fits("abc-12345", tool_id_style::nine_alnum));
    EXPECT_TRUE(tool_id_fits("abC123456", tool_id_style::nine_alnum));
}

TEST(tool_call_ids, foreign_ids_are_mapped_the_same_way_in_the_call_and_its_result) {
    std::vector<common_chat_msg> h = {assistant_calling({{"add", "call_6wHn2Xq0ZpL1aBcD3eFgH4iJ"}, {"mul", "abC123456"}}),
                                      tool_result("call_6wHn2Xq0ZpL1aBcD3eFgH4iJ"), tool_result("abC123456")};
    auto again = h;
    fill_tool_call_ids(h, tool_id_style::nine_alnum);
    EXPECT_TRUE(tool_id_fits(h[0].tool_calls[0].id, tool_id_style::nine_alnum));
    EXPECT_EQ(h[1].tool_call_id, h[0].tool_calls[0].id) << "the result still answers its call";
    EXPECT_EQ(h[0].tool_calls[1].id, "abC123456") << "an id the template accepts is kept";
    EXPECT_EQ(h[2].tool_call_id, "abC123456");
    fill_tool_call_ids(again, tool_id_style::nine_alnum);
    EXPECT_EQ(again[0].tool_calls[0].id, h[0].tool_calls[0].id) << "the same id maps the same way in the next request";
    std::vector<common_chat_msg> any = {assistant_calling({{"add", "x"}}), tool_result("x")};
    fill_tool_call_ids(any, tool_id_style::any);
    EXPECT_EQ(any[0].tool_calls[0].id, "x") << "templates without a rule get ids as sent";
}

TEST(tool_call_ids, an_ollama_history_without_ids_gets_them_and_results_answer_calls_in_order) {
    std::vector<common_chat_msg> h = {assistant_calling({{"add", ""}, {"mul", ""}}), tool_result("", "mul"), tool_result("")};
    fill_tool_call_ids(h, tool_id_style::nine_alnum);
    const auto & add = h[0].tool_calls[0].id;
    const auto & mul = h[0].tool_calls[1].id;
    EXPECT_TRUE(tool_id_fits(add, tool_id_style::nine_alnum));
    EXPECT_NE(add, mul);
    EXPECT_EQ(h[1].tool_call_id, mul) << "a result naming its tool answers that call";
    EXPECT_EQ(h[2].tool_call_id, add) << "an unnamed result answers the oldest open call";
    EXPECT_EQ(h[2].tool_name, "add") << "and learns its tool's name (Command-R renders it)";
    std::vector<common_chat_msg> lone = {tool_result("")};
    fill_tool_call_ids(lone, tool_id_style::any);
    EXPECT_TRUE(lone[0].tool_call_id.empty()) << "a result with no call before it is left as sent";
}

// Round three: a foreign id is mapped to derived_id(foreign), which anyone can compute; a client that
// sent that result as another call's literal id made two calls share one id (and a tool result
// answer both). Within a history every call keeps an id of its own.
TEST(tool_call_ids, a_foreign_id_never_maps_onto_another_calls_literal_id) {
    std::vector<common_chat_msg> probe = {assistant_calling({{"f", "call-foreign-1"}})};
    fill_tool_call_ids(probe, tool_id_style::nine_alnum);
    const std::string derived = probe[0].tool_calls[0].id;
    ASSERT_TRUE(tool_id_fits(derived, tool_id_style::nine_alnum));

    std::vector<common_chat_msg> h = {assistant_calling({{"f", "call-foreign-1"}, {"g", derived}}), tool_result("call-foreign-1"), tool_result(derived)};
    fill_tool_call_ids(h, tool_id_style::nine_alnum);
    const auto & calls = h[0].tool_calls;
    EXPECT_EQ(calls[1].id, derived) << "a literal id that fits is kept";
    EXPECT_NE(calls[0].id, calls[1].id) << "the foreign id maps elsewhere";
    EXPECT_TRUE(tool_id_fits(calls[0].id, tool_id_style::nine_alnum));
    EXPECT_EQ(h[1].tool_call_id, calls[0].id) << "its result still matches it";
    EXPECT_EQ(h[2].tool_call_id, calls[1].id);
    // The same foreign id and a missing one in a later message: still one id per call.
    h.push_back(assistant_calling({{"f", "call-foreign-1"}, {"h", ""}}));
    fill_tool_call_ids(h, tool_id_style::nine_alnum);
    std::set<std::string> distinct = {h[0].tool_calls[0].id, h[0].tool_calls[1].id, h[3].tool_calls[1].id};
    EXPECT_EQ(distinct.size(), 3u);
}
