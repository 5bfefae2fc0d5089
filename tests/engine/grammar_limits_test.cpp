// Grammar costs and limits (issue 10 item 4): a schema that would make every token check the whole
// vocabulary against thousands of parse positions is refused when it is submitted, with a 400-style
// error, instead of stalling the engine thread that steps every sequence of the model.
#include <gtest/gtest.h>
#include <json-schema-to-grammar.h>
#include <json.h>

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/chat_format.h"
#include "engine/grammar_cost.h"
#include "engine/sampler.h"
#include "engine/schema_support.h"
#include "engine_fixture.h"

using namespace rc;
using json = nlohmann::ordered_json;

namespace {

std::string enum_schema(int n) {
    json values = json::array();
    for (int i = 0; i < n; ++i) values.push_back("value-" + std::to_string(i));
    return json{{"type", "object"}, {"properties", {{"color", {{"enum", values}}}}}, {"required", {"color"}}}.dump();
}

uint64_t widest(const std::string & gbnf) {
    auto c = engine::measure_grammar(gbnf);
    EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.err().message);
    return c.ok() ? c->widest_point : 0;
}

}  // namespace

TEST(grammar_cost, counts_the_parse_positions_a_grammar_keeps_alive) {
    EXPECT_EQ(widest("root ::= \"a\" \"b\""), 1u);
    EXPECT_EQ(widest("root ::= \"a\" | \"b\" | \"c\""), 3u);
    EXPECT_EQ(widest("root ::= x x\nx ::= [a-z] | \"1\" | \"2\""), 3u);
    // An optional element lets the next one start as well.
    EXPECT_EQ(widest("root ::= \"a\"? (\"b\" | \"c\")"), 3u);
    const std::string enum_gbnf = json_schema_to_grammar(common_json::parse(enum_schema(1000)));
    EXPECT_GE(widest(enum_gbnf), 1000u);
    // A shared rule reached through two-way choices doubles per level: 2^40 from a few lines.
    std::string dag = "root ::= l0\n";
    for (int i = 0; i < 40; ++i) dag += "l" + std::to_string(i) + " ::= l" + std::to_string(i + 1) + " | l" + std::to_string(i + 1) + " \"x\"\n";
    dag += "l40 ::= \"a\"\n";
    EXPECT_GE(widest(dag), uint64_t(1) << 40);
    EXPECT_FALSE(engine::measure_grammar("root ::= (((").ok());
}

TEST(grammar_cost, ordinary_schemas_stay_narrow) {
    const auto schema = json{{"type", "object"},
                             {"properties",
                              {{"name", {{"type", "string"}}},
                               {"age", {{"type", "integer"}, {"minimum", 0}}},
                               {"tags", {{"type", "array"}, {"items", {{"type", "string"}}}}},
                               {"kind", {{"enum", {"a", "b", "c"}}}},
                               {"any", json::object()}}},
                             {"required", {"name"}}};
    EXPECT_LE(widest(json_schema_to_grammar(common_json::parse(schema.dump()))), 64u);
}

TEST(grammar_limits, unsupported_patterns_are_named) {
    auto back_ref = engine::check_pattern_support("^(a+)-\\1$");
    ASSERT_FALSE(back_ref.ok());
    EXPECT_NE(back_ref.err().message.find("back-reference (\\1)"), std::string::npos) << back_ref.err().message;
    EXPECT_FALSE(engine::check_pattern_support("^(?=a)b$").ok());
    EXPECT_FALSE(engine::check_pattern_support("^(?<name>a)\\k<name>$").ok());
    EXPECT_TRUE(engine::check_pattern_support("^[a-z\\d]{2,5}(?:-[0-9]+)?\\.\\d$").ok());
    EXPECT_TRUE(engine::check_pattern_support("^[\\1]$").ok()) << "inside a class it is no back-reference";
    auto schema = engine::check_schema_support(R"({"type":"object","properties":{"x":{"type":"string","pattern":"^(.)\\1$"}}})");
    EXPECT_FALSE(schema.ok());
    auto c = engine::schema_constraint(R"({"type":"string","pattern":"^(ab)\\1$"})");
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.err().code, errc::invalid_argument);
}

// Issue 26 item 4: {5,2} in a pattern made llama.cpp's converter build a grammar whose parse never
// ended; contradicting or oversized size keywords did the same through build_repetition.
TEST(grammar_limits, contradicting_or_oversized_repetitions_are_refused_before_conversion) {
    for (const char * pattern : {"^a{5,2}$", "^(ab){10,3}c$", "^a{3000}$", "^x{1,99999}$", "^a{b}$"}) {
        auto st = engine::check_pattern_support(pattern);
        EXPECT_FALSE(st.ok()) << pattern;
        if (!st.ok()) {
            EXPECT_NE(st.err().message.find("invalid JSON schema"), std::string::npos) << st.err().message;
        }
    }
    for (const char * pattern : {"^a{2,5}$", "^a{3}$", "^a{2,}$", "^[{}]{1,2}$", "^\\{a\\}$", "^a{0,2000}$"})
        EXPECT_TRUE(engine::check_pattern_support(pattern).ok()) << pattern;
    for (const char * schema : {R"({"type":"string","minLength":5,"maxLength":2})", R"({"type":"array","minItems":4,"maxItems":1})",
                                R"({"type":"object","minProperties":3,"maxProperties":2})", R"({"type":"integer","minimum":10,"maximum":2})",
                                R"({"type":"string","minLength":-1})", R"({"type":"string","minLength":1e30})", R"({"type":"string","maxLength":2.5})", R"({"type":"array","minItems":5000})",
                                R"({"type":"object","properties":{"a":{"type":"string","pattern":"^a{5,2}$"}}})"}) {
        auto st = engine::check_schema_support(schema);
        EXPECT_FALSE(st.ok()) << schema;
        auto c = engine::schema_constraint(schema);
        EXPECT_FALSE(c.ok()) << schema;
    }
    EXPECT_TRUE(engine::schema_constraint(R"({"type":"string","minLength":2,"maxLength":5,"pattern":"^[a-z]{2,5}$"})").ok());
    // Properties named like the keywords are schemas, not limits.
    EXPECT_TRUE(engine::schema_constraint(R"({"type":"object","properties":{"minimum":{"type":"integer"},"maximum":{"type":"integer"},"minLength":{"type":"string"},"pattern":{"type":"string"}}})").ok());
}

// Round three: conversion pinned a core before its own refusal (2,400 optional properties: 28-94 s
// to reach "the grammar is 614 KB"; 2,000 optional $refs: 15-22 s), and a nested repetition passed
// every check and stalled the engine at every token. Both are refused before the converter runs.
TEST(grammar_limits, costly_schemas_are_refused_before_conversion_and_fast) {
    for (const char * pattern : {"^(((((a{0,9}){0,9}){0,9}){0,9}){0,9}){0,9}$", "^(a{0,50}){0,50}$", "^((?:ab){10}){300}$"}) {
        auto st = engine::check_pattern_support(pattern);
        ASSERT_FALSE(st.ok()) << pattern;
        EXPECT_NE(st.err().message.find("nests repetitions"), std::string::npos) << st.err().message;
    }
    for (const char * pattern : {"^(\\d{1,3}\\.){3}\\d{1,3}$", "^([a-z]{2,20}){1,5}$", "^(a{0,9})(b{0,9}){0,9}$", "^[(]{3}(x){5}$"})
        EXPECT_TRUE(engine::check_pattern_support(pattern).ok()) << pattern;

    auto object_of = [](int n, bool required) {
        nlohmann::json props = nlohmann::json::object(), req = nlohmann::json::array();
        for (int i = 0; i < n; ++i) {
            props["p" + std::to_string(i)] = {{"type", "string"}};
            if (required) req.push_back("p" + std::to_string(i));
        }
        return nlohmann::json{{"type", "object"}, {"properties", props}, {"required", req}}.dump();
    };
    const auto t0 = std::chrono::steady_clock::now();
    auto refused = engine::schema_constraint(object_of(2400, false));
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.err().message.find("2400 optional properties"), std::string::npos) << refused.err().message;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1)) << "refused before the converter ran";
    EXPECT_TRUE(engine::check_schema_support(object_of(512, false)).ok());
    EXPECT_TRUE(engine::check_schema_support(object_of(2400, true)).ok()) << "required properties cost the converter little";
}

// A GBNF grammar with {m,n}, m > n, looped for ever in llama.cpp's parser (patched: a parse error),
// and one nested 20,000 groups deep overflowed its recursion (refused before it parses).
TEST(grammar_limits, contradicting_and_deeply_nested_grammars_do_not_parse) {
    EXPECT_FALSE(engine::measure_grammar("root ::= \"a\"{5,2}").ok());
    EXPECT_TRUE(engine::measure_grammar("root ::= \"a\"{2,5}").ok());
    const std::string deep = "root ::= " + std::string(20000, '(') + "\"a\"" + std::string(20000, ')');
    EXPECT_EQ(engine::gbnf_nesting(deep), 20000u);
    EXPECT_EQ(engine::gbnf_nesting("root ::= \"((((\" [(] # ((((\n x ::= (a (b))"), 2u) << "strings, classes and comments do not count";
}

TEST(grammar_limits, a_too_wide_enum_is_refused_at_submit_and_the_engine_keeps_serving) {
    auto e = test::start_engine("tiny-chat");
    ASSERT_TRUE(e);
    // A long generation keeps the engine busy meanwhile; it must not be held up.
    auto busy = test::greedy(e->model(), "Count to a hundred", 64);
    busy.sampling.ignore_eos = true;
    auto running = test::submit_ok(*e, busy);

    auto c = engine::schema_constraint(enum_schema(10000));
    ASSERT_TRUE(c.ok()) << c.err().message;
    auto req = test::greedy(e->model(), "Pick a color", 8);
    req.grammar = *c;
    const auto t0 = std::chrono::steady_clock::now();
    auto refused = e->submit(req);
    const auto took = std::chrono::steady_clock::now() - t0;
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.err().code, errc::invalid_argument);
    EXPECT_NE(refused.err().message.find("alternatives"), std::string::npos) << refused.err().message;
    EXPECT_LT(took, std::chrono::seconds(5));

    auto done = test::collect(*running);
    EXPECT_EQ(done.done.finish, engine::finish_reason::length);

    // A modest enum is fine.
    auto small = engine::schema_constraint(enum_schema(50));
    ASSERT_TRUE(small.ok());
    auto ok = test::greedy(e->model(), "Pick a color", 16);
    ok.grammar = *small;
    auto r = test::collect(*test::submit_ok(*e, ok));
    EXPECT_NE(r.text.find("value-"), std::string::npos) << r.text;
}
