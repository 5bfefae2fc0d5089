// The Ollama translator's pieces on their own: the keep_alive parser, options, message conversion,
// tool-call output in Ollama's shape (through the real template parser of tiny-chat), the GGUF
// metadata reader and the names listings show.
#include <gtest/gtest.h>

#include "http/api_error.h"
#include "api/chat_output.h"
#include "api/model_facts.h"
#include "api/ollama/chat_messages.h"
#include "api/ollama/keep_alive.h"
#include "api/ollama/ollama_common.h"
#include "api/ollama/ollama_options.h"
#include "api/ollama/ollama_stream.h"
#include "engine/chat_format.h"
#include "llama/gguf_metadata.h"
#include "test_models.h"

using namespace rc;
using namespace rc::api::ollama;
using rc::api::chat_output_parser;
using rc::api::human_number;
using rc::api::json;
using std::chrono::nanoseconds;
using namespace std::chrono_literals;

namespace {

std::optional<nanoseconds> keep_alive_of(const json & v) { return read_keep_alive(json{{"keep_alive", v}}); }

// The 400's field name, or "" when `f` does not throw one.
template <typename F>
std::string bad_field(F && f) {
    try {
        f();
    } catch (const api::api_error & e) {
        EXPECT_EQ(e.status, 400);
        return e.param;
    }
    return "";
}

}  // namespace

TEST(ollama_keep_alive, parses_go_durations) {
    EXPECT_EQ(parse_go_duration("10m"), nanoseconds(10min));
    EXPECT_EQ(parse_go_duration("1h30m"), nanoseconds(90min));
    EXPECT_EQ(parse_go_duration("300ms"), nanoseconds(300ms));
    EXPECT_EQ(parse_go_duration("1.5h"), nanoseconds(90min));
    EXPECT_EQ(parse_go_duration(".5s"), nanoseconds(500ms));
    EXPECT_EQ(parse_go_duration("2h45m30.5s"), nanoseconds(2h + 45min + 30s + 500ms));
    EXPECT_EQ(parse_go_duration("1us"), nanoseconds(1000));
    EXPECT_EQ(parse_go_duration("1\xC2\xB5s"), nanoseconds(1000));
    EXPECT_EQ(parse_go_duration("7ns"), nanoseconds(7));
    EXPECT_EQ(parse_go_duration("0"), nanoseconds(0));
    EXPECT_EQ(parse_go_duration("-1m"), nanoseconds(-1min));
    EXPECT_EQ(parse_go_duration("+5s"), nanoseconds(5s));
    for (const char * bad : {"", "10", "m", "1x", "1h-5m", ".s", "1.2.3s", "5 m", "-", "100000000h"}) {
        EXPECT_FALSE(parse_go_duration(bad).has_value()) << bad;
    }
}

TEST(ollama_keep_alive, reads_strings_numbers_and_forever) {
    EXPECT_FALSE(read_keep_alive(json::object()).has_value());
    EXPECT_FALSE(keep_alive_of(nullptr).has_value());
    EXPECT_EQ(keep_alive_of("5m"), nanoseconds(5min));
    EXPECT_EQ(keep_alive_of(30), nanoseconds(30s));
    EXPECT_EQ(keep_alive_of(2.5), nanoseconds(2500ms));
    EXPECT_EQ(keep_alive_of("300"), nanoseconds(300s)) << "a bare number in a string is seconds";
    EXPECT_EQ(keep_alive_of(0), nanoseconds(0));
    EXPECT_EQ(keep_alive_of("0s"), nanoseconds(0));
    EXPECT_EQ(keep_alive_of(-1), keep_alive_forever);
    EXPECT_EQ(keep_alive_of("-1m"), keep_alive_forever);
    EXPECT_EQ(keep_alive_of(1e30), keep_alive_forever);
    EXPECT_EQ(bad_field([] { keep_alive_of("soon"); }), "keep_alive");
    EXPECT_EQ(bad_field([] { keep_alive_of(true); }), "keep_alive");
    EXPECT_EQ(bad_field([] { keep_alive_of(json::array()); }), "keep_alive");
}

TEST(ollama_options, map_onto_the_engine_request) {
    api::api_options opts;
    opts.max_tokens_cap = 1000;
    models::model_manager mm(models::local_catalog("/nonexistent"), {}, {});
    api::api_context ctx{mm, opts};
    engine::generation_request req;
    read_options(json{{"options",
                       {{"num_predict", 7}, {"temperature", 0.2}, {"top_k", 5}, {"top_p", 0.5}, {"min_p", 0.1}, {"typical_p", 0.9},
                        {"repeat_last_n", -1}, {"repeat_penalty", 1.2}, {"presence_penalty", 0.5}, {"frequency_penalty", -0.5},
                        {"seed", 42}, {"stop", {"\n\n", ""}}, {"num_ctx", 8192}, {"mirostat", 1}, {"low_vram", "whatever"}}}},
                 ctx, req);
    EXPECT_EQ(req.max_tokens, 7);
    EXPECT_FLOAT_EQ(req.sampling.temperature, 0.2f);
    EXPECT_EQ(req.sampling.top_k, 5);
    EXPECT_FLOAT_EQ(req.sampling.top_p, 0.5f);
    EXPECT_FLOAT_EQ(req.sampling.min_p, 0.1f);
    EXPECT_FLOAT_EQ(req.sampling.typical_p, 0.9f);
    EXPECT_EQ(req.sampling.repeat_last_n, -1);
    EXPECT_FLOAT_EQ(req.sampling.repeat_penalty, 1.2f);
    EXPECT_FLOAT_EQ(req.sampling.presence_penalty, 0.5f);
    EXPECT_FLOAT_EQ(req.sampling.frequency_penalty, -0.5f);
    EXPECT_EQ(req.sampling.seed, 42u);
    EXPECT_EQ(req.stop, std::vector<std::string>{"\n\n"}) << "empty stops are dropped";

    auto max_tokens = [&](const json & options) {
        engine::generation_request r;
        read_options(json{{"options", options}}, ctx, r);
        return std::make_pair(r.max_tokens, r.sampling.seed.has_value());
    };
    EXPECT_EQ(max_tokens({{"num_predict", -1}}).first, 1000) << "unlimited stops at the server's cap";
    EXPECT_EQ(max_tokens({{"num_predict", -2}}).first, 1000);
    EXPECT_EQ(max_tokens({{"num_predict", 5000}}).first, 1000) << "bounded like Ollama, not refused";
    EXPECT_EQ(max_tokens(json::object()).first, 1000);
    EXPECT_FALSE(max_tokens({{"seed", -1}}).second) << "seed -1 is a random seed";

    EXPECT_EQ(bad_field([&] { max_tokens({{"temperature", "hot"}}); }), "options.temperature");
    EXPECT_EQ(bad_field([&] { max_tokens({{"num_predict", 1.5}}); }), "options.num_predict");
    EXPECT_EQ(bad_field([&] { max_tokens({{"num_predict", -3}}); }), "options.num_predict");
    EXPECT_EQ(bad_field([&] { max_tokens({{"stop", 5}}); }), "options.stop");
    EXPECT_EQ(bad_field([&] { max_tokens({{"num_ctx", "big"}}); }), "options.num_ctx");
    EXPECT_EQ(bad_field([&] { max_tokens({{"use_mmap", 1}}); }), "options.use_mmap");
    EXPECT_EQ(bad_field([&] {
                  engine::generation_request r;
                  read_options(json{{"options", "fast"}}, ctx, r);
              }),
              "options");

    EXPECT_EQ(read_format(json{{"format", "json"}}), R"({"type":"object"})");
    EXPECT_EQ(read_format(json{{"format", ""}}), "");
    EXPECT_EQ(read_format(json{{"format", {{"type", "string"}}}}), R"({"type":"string"})");
    EXPECT_EQ(bad_field([] { read_format(json{{"format", 3}}); }), "format");
    EXPECT_EQ(read_think(json{{"think", "low"}}), true);
    EXPECT_EQ(read_think(json{{"think", false}}), false);
    EXPECT_FALSE(read_think(json::object()).has_value());
    EXPECT_EQ(read_logprobs(json{{"logprobs", true}, {"top_logprobs", 3}}), 3);
    EXPECT_EQ(read_logprobs(json{{"top_logprobs", 3}}), -1);
}

TEST(ollama_messages, become_llama_cpp_messages_with_string_arguments) {
    json body = {{"messages",
                  {{{"role", "system"}, {"content", "S"}},
                   {{"role", "user"}, {"content", "Weather?"}},
                   {{"role", "assistant"}, {"content", ""}, {"thinking", "let me see"},
                    {"tool_calls", {{{"function", {{"name", "get_weather"}, {"arguments", {{"city", "Paris"}}}}}}}}},
                   {{"role", "tool"}, {"content", "21C"}, {"tool_name", "get_weather"}}}}};
    auto msgs = read_messages(body);
    ASSERT_EQ(msgs.size(), 4u);
    EXPECT_EQ(msgs[0].role, "system");
    ASSERT_EQ(msgs[2].tool_calls.size(), 1u);
    EXPECT_EQ(msgs[2].tool_calls[0].name, "get_weather");
    EXPECT_EQ(json::parse(msgs[2].tool_calls[0].arguments), json({{"city", "Paris"}}));
    EXPECT_EQ(msgs[2].reasoning_content, "let me see");
    EXPECT_EQ(msgs[3].role, "tool");
    EXPECT_EQ(msgs[3].tool_name, "get_weather");
    EXPECT_EQ(msgs[3].content, "21C");

    EXPECT_TRUE(read_messages(json::object()).empty());
    EXPECT_EQ(bad_field([] { read_messages(json{{"messages", {{{"role", "wizard"}, {"content", "x"}}}}}); }), "messages");
    EXPECT_EQ(bad_field([] { read_messages(json{{"messages", {{{"role", "user"}, {"content", {1, 2}}}}}}); }), "messages");
    EXPECT_EQ(bad_field([] { read_messages(json{{"messages", {{{"role", "user"}, {"content", "x"}, {"images", {"aGk="}}}}}}); }), "messages");
    EXPECT_EQ(bad_field([] { read_tools(json{{"tools", "get_weather"}}); }), "tools");
    auto tools = read_tools(json{{"tools", {{{"function", {{"name", "f"}, {"parameters", {{"type", "object"}}}}}}}}});
    ASSERT_EQ(tools.size(), 1u) << "a tool without type is a function";
    EXPECT_EQ(tools[0].name, "f");
}

TEST(ollama_tool_calls, model_output_becomes_calls_with_object_arguments) {
    auto m = test::shared_model("tiny-chat");
    ASSERT_TRUE(m);
    engine::chat_input in;
    in.messages = read_messages(json{{"messages", {{{"role", "user"}, {"content", "Weather in Paris?"}}}}});
    in.tools = read_tools(json::parse(R"({"tools":[{"type":"function","function":{"name":"get_weather",
        "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]})"));
    auto p = engine::render_chat(*m, in);
    ASSERT_TRUE(p.ok()) << p.err().message;
    EXPECT_NE(p->text.find("get_weather"), std::string::npos) << "the tool is rendered into the prompt";

    // What a Qwen2.5 model writes for a call, fed in small pieces as the engine streams it.
    std::string reply = "Checking.<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
    chat_output_parser split(p->parser);
    std::string streamed;
    for (size_t i = 0; i < reply.size(); i += 3) streamed += split.feed(reply.substr(i, 3)).content;
    streamed += split.finish().content;
    EXPECT_EQ(streamed, split.message().content) << "streamed pieces add up to the final content";
    EXPECT_EQ(streamed.find("tool_call"), std::string::npos) << "call markup is not content: " << streamed;
    ASSERT_EQ(split.message().tool_calls.size(), 1u);
    json calls = tool_calls_json(split.message().tool_calls);
    ASSERT_EQ(calls.size(), 1u);
    EXPECT_EQ(calls[0]["function"]["name"], "get_weather");
    ASSERT_TRUE(calls[0]["function"]["arguments"].is_object()) << "Ollama arguments are objects: " << calls.dump();
    EXPECT_EQ(calls[0]["function"]["arguments"], json({{"city", "Paris"}}));
    EXPECT_EQ(calls[0]["function"]["index"], 0);
    EXPECT_EQ(calls[0]["id"].get<std::string>().rfind("call_", 0), 0u);

    // Raw output passes through untouched.
    chat_output_parser raw(std::nullopt);
    EXPECT_EQ(raw.feed("<tool_call>").content, "<tool_call>");
    EXPECT_EQ(raw.finish().content, "");
    EXPECT_EQ(raw.message().content, "<tool_call>");
}

TEST(ollama_model_facts, read_from_the_gguf_header) {
    auto md = llama::read_gguf_metadata(test::model_path("tiny-chat"));
    ASSERT_TRUE(md.ok()) << md.err().message;
    EXPECT_EQ(md->get_string("general.architecture"), "qwen2");
    EXPECT_GT(md->get_uint("qwen2.context_length").value_or(0), 0u);
    EXPECT_GT(md->n_params, 1000u);
    EXPECT_EQ(llama::quantization_level(md.value()), "F16");
    EXPECT_EQ(md->dominant_tensor_type, "f16");
    const auto * tokens = md->find("tokenizer.ggml.tokens");
    ASSERT_TRUE(tokens);
    EXPECT_TRUE(tokens->is_array);
    EXPECT_GT(tokens->array_size, 1000u);
    EXPECT_TRUE(tokens->values.empty()) << "long arrays are summarised, not read";
    auto q8 = llama::read_gguf_metadata(test::model_path("tiny-chat-q8"));
    ASSERT_TRUE(q8.ok());
    EXPECT_EQ(llama::quantization_level(q8.value()), "Q8_0");
    EXPECT_EQ(llama::read_gguf_metadata("/nonexistent.gguf").err().code, errc::not_found);
    EXPECT_EQ(llama::read_gguf_metadata("/etc/hostname").err().code, errc::invalid_argument);

    EXPECT_EQ(llama::ftype_name(15), "Q4_K_M");
    EXPECT_EQ(llama::ftype_name(0), "F32");
    EXPECT_EQ(llama::ftype_name(32), "BF16");
    EXPECT_EQ(llama::ftype_name(4), "");
    EXPECT_EQ(human_number(39720000), "39.72M");
    EXPECT_EQ(human_number(137000000), "137M");
    EXPECT_EQ(human_number(1500000000), "1.5B");
    EXPECT_EQ(human_number(7000000000), "7B");
    EXPECT_EQ(human_number(22000), "22K");
    EXPECT_EQ(human_number(999), "999");
    EXPECT_EQ(rfc3339(std::chrono::system_clock::time_point(std::chrono::nanoseconds(1700000000123456789LL))),
              "2023-11-14T22:13:20.123456789Z");
    EXPECT_EQ(display_name("demo"), "demo:latest");
}
