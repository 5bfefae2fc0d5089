// parse_body's bounds (depth, values) and the typed reads that guard token ids.
#include <gtest/gtest.h>

#include <chrono>

#include "http/api_error.h"
#include "http/json_fields.h"

using namespace rc::http;

namespace {

http_request body(std::string text) {
    http_request r;
    r.body = std::move(text);
    return r;
}

// The status of the api_error `f` throws (0: none).
template <typename F>
int status_of(F && f) {
    try {
        f();
    } catch (const api_error & e) {
        return e.status;
    }
    return 0;
}

std::string nested(int depth, const std::string & open = "[", const std::string & close = "]") {
    std::string s = "{\"tools\":";
    for (int i = 0; i < depth; ++i) s += open;
    for (int i = 0; i < depth; ++i) s += close;
    return s + "}";
}

}  // namespace

TEST(parse_body, refuses_deep_nesting_before_building_anything) {
    // 100,000 levels crashed the server (recursion in the JSON dump, then in llama.cpp's schema
    // converter); now it is a 400, found by a scan that stops at the first level too deep.
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(status_of([] { parse_body(body(nested(100000))); }), 400);
    EXPECT_EQ(status_of([] { parse_body(body(nested(20000, "{\"a\":", "}"))); }), 400);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
    // The top-level object is level 1: 63 more fit, 64 more do not.
    EXPECT_EQ(status_of([] { parse_body(body(nested(max_json_depth - 1))); }), 0);
    EXPECT_EQ(status_of([] { parse_body(body(nested(max_json_depth))); }), 400);
}

TEST(parse_body, brackets_inside_strings_are_text) {
    std::string deep_text = "{\"content\":\"" + std::string(1000, '[') + "\\\"" + std::string(1000, '{') + "\"}";
    json j = parse_body(body(deep_text));
    EXPECT_EQ(j["content"].get<std::string>().size(), 2001u);
}

TEST(parse_body, bounds_the_number_of_values) {
    std::string many = "{\"tokens\":[0";
    for (size_t i = 0; i < max_json_values; ++i) many += ",0";
    many += "]}";
    EXPECT_EQ(status_of([&] { parse_body(body(many)); }), 413);
    EXPECT_EQ(status_of([] { parse_body(body("{\"tokens\":[1,2,3]}")); }), 0);
}

TEST(parse_body, keeps_refusing_what_is_not_a_json_object) {
    EXPECT_EQ(status_of([] { parse_body(body("")); }), 400);
    EXPECT_EQ(status_of([] { parse_body(body("{not json")); }), 400);
    EXPECT_EQ(status_of([] { parse_body(body("[1,2]")); }), 400);
    EXPECT_EQ(status_of([] { parse_body(body("{\"a\":\"\xC3\x28\"}")); }), 400) << "invalid UTF-8";
}

TEST(read_token_ids, refuses_ids_that_would_wrap_around_32_bits) {
    // 4294967301 = 2^32 + 5 used to become token 5.
    for (const char * bad : {"[4294967301]", "[-1]", "[2147483648]", "[18446744073709551615]", "[1.5]", "[\"7\"]", "[true]"}) {
        EXPECT_EQ(status_of([&] { read_token_ids(json::parse(bad), "prompt"); }), 400) << bad;
    }
    try {
        read_token_ids(json::parse("[1, 4294967301]"), "context");
        FAIL() << "no error";
    } catch (const api_error & e) {
        EXPECT_EQ(e.param, "context");
    }
    EXPECT_EQ(read_token_ids(json::parse("[0, 5, 2147483647]"), "prompt"), (std::vector<int32_t>{0, 5, 2147483647}));
    EXPECT_EQ(status_of([] { read_token_ids(json::parse("5"), "prompt"); }), 400);
}

TEST(parse_json_bounded, reads_model_output_under_the_same_bounds) {
    EXPECT_EQ(parse_json_bounded(R"({"city":"Paris"})"), json({{"city", "Paris"}}));
    EXPECT_FALSE(parse_json_bounded("{\"city\":").has_value());
    EXPECT_FALSE(parse_json_bounded(std::string(30000, '[') + std::string(30000, ']')).has_value())
        << "a model told to write brackets must not reach the recursive writer";
}

namespace {
std::string object_of(int keys) {
    std::string s = "{";
    for (int i = 0; i < keys; ++i) s += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":" + std::to_string(i);
    return s + "}";
}
}  // namespace

// Issue 26 item 6: each key of an object is found by a scan of the ones before it, so 50,000 keys
// took 28 s. The keys' quadratic cost is bounded before parsing: one object of 4,096 keys passes,
// one much larger is a 413 at once; many small objects cost nothing.
TEST(parse_body, bounds_the_quadratic_cost_of_object_keys) {
    EXPECT_EQ(status_of([] { parse_body(body("{\"model\":\"m\",\"unused\":" + object_of(4096) + "}")); }), 0);
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(status_of([] { parse_body(body("{\"unused\":" + object_of(50000) + "}")); }), 413);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
    std::string many = "{\"list\":[";
    for (int i = 0; i < 20000; ++i) many += (i ? "," : "") + object_of(8);
    EXPECT_EQ(status_of([&] { parse_body(body(many + "]}")); }), 0);
    // Keys inside strings are text, not keys.
    EXPECT_EQ(status_of([] { parse_body(body("{\"s\":\"" + std::string(100000, ':') + "\"}")); }), 0);
    // The same bound on JSON text inside a string that llama.cpp parses again.
    EXPECT_EQ(status_of([] { check_json_text(std::string(100, '['), "messages[1].tool_calls[0].function.arguments"); }), 400);
    EXPECT_EQ(status_of([] { check_json_text("{\"a\":[1,2]}", "x"); }), 0);
    EXPECT_EQ(status_of([] { check_json_text("not json at all", "x"); }), 0);
}
