// llama::run_template (src/llama/template_budget.h) over llama.cpp's jinja engine with the budget
// patch (scripts/llama-patches/jinja-budgets.patch): hostile templates end in an error naming the
// limit, fast, where they used to overflow the stack or run for minutes; real templates render.
#include <chat.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "llama/template_budget.h"

using namespace std::chrono_literals;
using rc::llama::run_template;

namespace {

// Checks the size, parses and trial-renders `source` (what a model load does), then renders one
// user message (`content`).
rc::status render(const std::string & source, std::string * out = nullptr, const std::function<bool()> & cancelled = {},
                  const std::string & content = "hello") {
    if (auto st = rc::llama::check_template_size(source); !st) return st;
    common_chat_templates_ptr t;
    if (auto st = run_template("chat template", [&] { t = common_chat_templates_init(nullptr, source); }, cancelled); !st) return st;
    common_chat_templates_inputs in;
    common_chat_msg m;
    m.role = "user";
    m.content = content;
    in.messages = {m};
    in.use_jinja = true;
    in.add_generation_prompt = true;
    return run_template("chat template", [&] {
        auto p = common_chat_templates_apply(t.get(), in);
        if (out) *out = p.prompt;
    }, cancelled);
}

std::string message_of(const rc::status & st) { return st.ok() ? std::string("(ok)") : st.err().message; }

}  // namespace

TEST(template_budget, a_self_calling_macro_stops_at_the_depth_limit) {
    const auto t0 = std::chrono::steady_clock::now();
    auto st = render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
    ASSERT_FALSE(st.ok());
    EXPECT_NE(message_of(st).find("exceeded its budget"), std::string::npos) << message_of(st);
    EXPECT_NE(message_of(st).find("nesting is deeper than 1000"), std::string::npos) << message_of(st);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
}

TEST(template_budget, huge_loops_and_strings_stop_before_they_take_the_memory) {
    for (const auto & [source, limit] : std::vector<std::pair<std::string, std::string>>{
             {"{% for i in range(100000000) %}x{% endfor %}", "values"},
             {"{% for a in range(3000) %}{% for b in range(3000) %}{% endfor %}{% endfor %}", "values"},
             {"{{ 'x' * 1000000000 }}", "string of"},
             {"{% set s = 'ab' %}{% for i in range(40) %}{% set s = s ~ s %}{% endfor %}{{ s }}", "string of"},
             {"{{ 'abc' | indent(1000000000) }}", "string of"},
             {"{{ messages | tojson(indent=1000000000) }}", "tojson indent"},  // refused before parsing (check_template_size)
             {"{{ 'x' * 20000000 }}", "string of"},
             {"{{ ('xxxxxxxxxx' * 1000000) | replace('', 'yyyyyyyyyy') }}", "string of"}}) {
        const auto t0 = std::chrono::steady_clock::now();
        auto st = render(source);
        ASSERT_FALSE(st.ok()) << source;
        EXPECT_NE(message_of(st).find(limit), std::string::npos) << source << ": " << message_of(st);
        const auto took = std::chrono::steady_clock::now() - t0;
        EXPECT_LT(took, 15s) << source;
        std::printf("%6lld ms  %s\n", static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()), source.c_str());
    }
}

TEST(template_budget, deep_nesting_in_the_source_is_a_parse_error) {
    std::string parens = "{{ " + std::string(150000, '(') + "1" + std::string(150000, ')') + " }}";
    auto too_big = render(parens);
    ASSERT_FALSE(too_big.ok());
    EXPECT_NE(message_of(too_big).find("bytes, more than"), std::string::npos) << "the size check comes first: " << message_of(too_big);
    EXPECT_FALSE(rc::llama::check_template_size(parens).ok());

    std::string nested = "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
    auto st = render(nested);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(message_of(st).find("nested deeper than 256"), std::string::npos) << message_of(st);

    std::string blocks;
    for (int i = 0; i < 2000; ++i) blocks += "{% if true %}";
    auto deep_blocks = render(blocks);
    ASSERT_FALSE(deep_blocks.ok());
}

TEST(template_budget, a_cancelled_render_stops) {
    const auto t0 = std::chrono::steady_clock::now();
    auto st = render("{% for a in range(1000) %}{% for b in range(1000) %}{% set c = a * b %}{% endfor %}{% endfor %}", nullptr, [] { return true; });
    ASSERT_FALSE(st.ok());
    EXPECT_NE(message_of(st).find("was cancelled"), std::string::npos) << message_of(st);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
}

TEST(template_budget, real_templates_render_and_recursion_within_bounds_is_fine) {
    std::string out;
    auto st = render("{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}", &out);
    ASSERT_TRUE(st.ok()) << message_of(st);
    EXPECT_EQ(out, "<|user|>hello<|assistant|>");
    // A macro recursing 50 levels (templates that render nested tool schemas do so).
    auto recursive = render("{% macro f(n) %}{% if n > 0 %}({{ f(n - 1) }}){% endif %}{% endmacro %}{{ f(50) }}", &out);
    ASSERT_TRUE(recursive.ok()) << message_of(recursive);
    EXPECT_EQ(out, std::string(50, '(') + std::string(50, ')'));
}


namespace {

TEST(template_budget, a_tojson_indent_that_is_not_a_small_integer_is_refused_before_parsing) {
    EXPECT_FALSE(rc::llama::check_template_size("{{ messages|tojson(indent=3119f4505) }}").ok());
    EXPECT_FALSE(rc::llama::check_template_size("{{ messages | tojson(100000) }}").ok());
    EXPECT_TRUE(rc::llama::check_template_size("{{ messages|tojson(indent=2) }}{{ tools | tojson }}").ok());
    EXPECT_TRUE(rc::llama::check_template_size("{{ x|tojson(indent=n) }}").ok()) << "a variable: left to the render budget";
}

}  // namespace

// Round three: list concatenation made no counted values (a list doubled 40 times grew the server to
// 23.7 GB), and each string was capped alone (twenty 60 MB strings in a list passed at +1.4 GB).
// Every string and list slot a render builds counts against one total, before it is built.
TEST(template_budget, what_a_render_builds_in_all_is_bounded_before_it_is_built) {
    for (const std::string & source : {
             std::string("{% set ns = namespace(a=[1]) %}{% for i in range(40) %}{% set ns.a = ns.a + ns.a %}{% endfor %}{{ ns.a | length }}"),
             std::string("{% set big = ('x' * 1000) | replace('x', 'x' * 60000) %}{% set ns = namespace(l=[]) %}"
                         "{% for i in range(20) %}{% set ns.l = ns.l + [big ~ i] %}{% endfor %}{{ ns.l | length }}")}) {
        const auto t0 = std::chrono::steady_clock::now();
        auto st = render(source);
        ASSERT_FALSE(st.ok()) << source;
        const std::string why = message_of(st);
        EXPECT_NE(why.find("bytes of strings and lists in all"), std::string::npos) << source << ": " << why;
        EXPECT_LT(std::chrono::steady_clock::now() - t0, 20s) << source;
    }
    auto doubled = render("{% set ns = namespace(a=[1]) %}{% for i in range(40) %}{% set ns.a = ns.a + ns.a %}{% endfor %}");
    EXPECT_NE(message_of(doubled).find("more than 536870912 bytes of strings and lists in all"), std::string::npos) << message_of(doubled);
    // Within the total, the same shapes render: 15 doublings, three of the 60 MB strings.
    std::string out;
    auto small = render("{% set ns = namespace(a=[1]) %}{% for i in range(15) %}{% set ns.a = ns.a + ns.a %}{% endfor %}{{ ns.a | length }}", &out);
    ASSERT_TRUE(small.ok()) << message_of(small);
    EXPECT_EQ(out, "32768");
    auto three = render("{% set big = ('x' * 1000) | replace('x', 'x' * 60000) %}{% set ns = namespace(l=[]) %}"
                        "{% for i in range(3) %}{% set ns.l = ns.l + [big ~ i] %}{% endfor %}{{ ns.l | length }}", &out);
    ASSERT_TRUE(three.ok()) << message_of(three);
    EXPECT_EQ(out, "3");
}

// The total leaves room for the largest prompt a client may send: a 30 MB message (the body limit is
// 32 MiB) through real families' templates, parse, trial render and render together.
TEST(template_budget, a_prompt_at_the_body_limit_renders_on_real_templates) {
    const std::string content(30u << 20, 'a');
    for (const char * file : {"Qwen-Qwen2.5-7B-Instruct.jinja", "meta-llama-Llama-3.1-8B-Instruct.jinja", "google-gemma-4-31B-it.jinja",
                              "openai-gpt-oss-120b.jinja", "mistralai-Mistral-Nemo-Instruct-2407.jinja"}) {
        std::ifstream in(std::string(RC_LLAMA_TEMPLATES_DIR) + "/" + file);
        std::stringstream source;
        source << in.rdbuf();
        ASSERT_FALSE(source.str().empty()) << file;
        std::string out;
        auto st = render(source.str(), &out, {}, content);
        EXPECT_TRUE(st.ok()) << file << ": " << message_of(st);
        EXPECT_GT(out.size(), content.size()) << file;
    }
}

// Round three: work inside one builtin escaped the deadline. `replace` on a 1 MB string replaced
// in place (the rest of the string moved at every match: 38-53 s), and a substring search compared
// the whole needle at every place (4 MB haystack, 200 KB needle: 125 s). Both are linear now, and
// their loops poll the deadline.
TEST(template_budget, replace_split_and_substring_search_stay_linear) {
    struct case_t {
        std::string source, expected;
    };
    for (const auto & [source, expected] : std::vector<case_t>{
             {"{% set s = ('ab' * 1000) | replace('ab', 'ab' * 500) %}{{ s | replace('a', 'xy') | length }}", "1500000"},
             {"{% set s = ('a,' * 100) | replace('a,', 'a,' * 500) %}{{ s.split(',') | length }}", "50001"},
             {"{% set hay = ('a' * 4000) | replace('a', 'a' * 1000) %}{% set needle = ('a' * 200) | replace('a', 'a' * 1000) ~ 'b' %}"
              "{{ needle in hay }}",
              "False"}}) {
        const auto t0 = std::chrono::steady_clock::now();
        std::string out;
        auto st = render(source, &out);
        ASSERT_TRUE(st.ok()) << source << ": " << message_of(st);
        EXPECT_EQ(out, expected) << source;
        const auto took = std::chrono::steady_clock::now() - t0;
        EXPECT_LT(took, 5s) << source;
        std::printf("%6lld ms  %s\n", static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()), source.c_str());
    }
}
