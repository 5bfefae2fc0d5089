// The real `rustycage serve` binary on free ports, driven over HTTP: OpenAI chat (plain, streamed,
// JSON schema, tool calls), completions, embeddings, models, health, error shapes, and the CLI.
#include <cpp-httplib/httplib.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <base64.hpp>
#include <cmath>
#include <cstring>
#include <sstream>

#include "support/run_command.h"
#include "support/shared_server.h"
#include "support/sse.h"
#include "support/temp_dir.h"

using json = nlohmann::json;
using rc::test::model_path;

namespace {

class serve : public rc::test::shared_server {
  protected:
    json post(const std::string & path, const json & body, int expect_status = 200) {
        auto res = client().Post(path, body.dump(), "application/json");
        EXPECT_TRUE(res) << "no response from " << path;
        if (!res) return {};
        EXPECT_EQ(res->status, expect_status) << res->body;
        return json::parse(res->body, nullptr, false);
    }
    // SSE body → the JSON of each "data:" event, plus whether it ended with [DONE].
    // The stream's JSON events in order; `done` when [DONE] came (last). Comments (keep-alives a
    // slow step makes the server send) are no events: parsed as the SSE spec says (support/sse.h).
    static std::vector<json> sse_events(const std::string & body, bool & done) {
        std::vector<json> out;
        done = false;
        const auto stream = rc::test::parse_sse(body);
        EXPECT_TRUE(stream.unknown.empty()) << "unexpected SSE line: " << stream.unknown.front();
        for (const auto & ev : stream.events) {
            if (ev.data == "[DONE]") {
                done = true;
                continue;
            }
            EXPECT_FALSE(done) << "event after [DONE]";
            out.push_back(json::parse(ev.data));
        }
        return out;
    }
};

json chat(const std::string & text, int max_tokens) {
    return {{"model", "demo"}, {"messages", {{{"role", "user"}, {"content", text}}}}, {"max_tokens", max_tokens}, {"temperature", 0}};
}

json weather_tool() {
    return {{"type", "function"},
            {"function",
             {{"name", "get_weather"},
              {"description", "Weather for a city"},
              {"parameters", {{"type", "object"}, {"properties", {{"city", {{"type", "string"}, {"maxLength", 12}}}}}, {"required", {"city"}}}}}}};
}

}  // namespace

TEST_F(serve, chat_completion) {
    json r = post("/v1/chat/completions", chat("Hello there", 8));
    EXPECT_EQ(r["object"], "chat.completion");
    EXPECT_EQ(r["model"], "demo");
    ASSERT_EQ(r["choices"].size(), 1u);
    EXPECT_EQ(r["choices"][0]["message"]["role"], "assistant");
    EXPECT_TRUE(r["choices"][0]["message"]["content"].is_string());
    EXPECT_FALSE(r["choices"][0]["message"]["content"].get<std::string>().empty());
    EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
    EXPECT_EQ(r["usage"]["completion_tokens"], 8);
    EXPECT_GT(r["usage"]["prompt_tokens"].get<int>(), 5);
    EXPECT_EQ(r["usage"]["total_tokens"], r["usage"]["prompt_tokens"].get<int>() + 8);
}

TEST_F(serve, streamed_chat_is_framed_like_openai) {
    json body = chat("Hello there", 6);
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
    auto res = client().Post("/v1/chat/completions", body.dump(), "application/json");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200);
    EXPECT_NE(res->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
    bool done = false;
    auto events = sse_events(res->body, done);
    EXPECT_TRUE(done) << "stream must end with data: [DONE]";
    ASSERT_GE(events.size(), 3u);
    EXPECT_EQ(events.front()["choices"][0]["delta"]["role"], "assistant");
    std::string text;
    int finishes = 0;
    for (size_t i = 0; i < events.size(); ++i) {
        EXPECT_EQ(events[i]["id"], events[0]["id"]);
        EXPECT_EQ(events[i]["object"], "chat.completion.chunk");
        if (events[i]["choices"].empty()) continue;
        const auto & c = events[i]["choices"][0];
        if (c["delta"].contains("content")) text += c["delta"]["content"].get<std::string>();
        if (!c["finish_reason"].is_null()) ++finishes;
    }
    EXPECT_EQ(finishes, 1);
    EXPECT_FALSE(text.empty());
    const json & usage_chunk = events.back();
    EXPECT_TRUE(usage_chunk["choices"].empty()) << "usage chunk has choices: []";
    EXPECT_EQ(usage_chunk["usage"]["completion_tokens"], 6);
    // Without include_usage there is no usage chunk.
    body.erase("stream_options");
    res = client().Post("/v1/chat/completions", body.dump(), "application/json");
    for (const auto & ev : sse_events(res->body, done)) EXPECT_FALSE(ev.contains("usage") && ev["choices"].empty());
}

TEST_F(serve, json_schema_response_format_yields_valid_json) {
    json body = chat("A person, please", 200);
    body["temperature"] = 1.0;
    body["seed"] = 5;
    body["response_format"] = {{"type", "json_schema"},
                               {"json_schema",
                                {{"name", "person"},
                                 {"schema",
                                  {{"type", "object"},
                                   {"properties", {{"name", {{"type", "string"}, {"maxLength", 10}}}, {"age", {{"type", "integer"}}}}},
                                   {"required", {"name", "age"}},
                                   {"additionalProperties", false}}}}}};
    json r = post("/v1/chat/completions", body);
    ASSERT_EQ(r["choices"][0]["finish_reason"], "stop");
    json content = json::parse(r["choices"][0]["message"]["content"].get<std::string>(), nullptr, false);
    ASSERT_TRUE(content.is_object()) << r.dump();
    EXPECT_TRUE(content["name"].is_string());
    EXPECT_TRUE(content["age"].is_number_integer());
}

// Round three: on a loaded machine a slow token makes the server send `: keep-alive`, which this
// suite's reader took for a malformed stream. The spec's reading: a comment, no event.
TEST(serve_sse, keep_alive_comments_and_crlf_lines_are_read_as_the_spec_says) {
    const auto s = rc::test::parse_sse(": keep-alive\n\ndata: {\"a\":1}\r\n\r\n: keep-alive\n\nevent: done\ndata:[DONE]\n\ndata: x\ndata: y\n\n");
    ASSERT_EQ(s.events.size(), 3u);
    EXPECT_EQ(s.events[0].data, "{\"a\":1}");
    EXPECT_EQ(s.events[1].event, "done");
    EXPECT_EQ(s.events[1].data, "[DONE]");
    EXPECT_EQ(s.events[2].data, "x\ny");
    EXPECT_EQ(s.comments, 2);
    EXPECT_TRUE(s.unknown.empty());
    EXPECT_EQ(rc::test::parse_sse("bogus line\n\n").unknown.size(), 1u);
}

TEST_F(serve, forced_tool_call_round_trip) {
    json body = chat("Weather in Paris?", 200);
    body["tools"] = json::array({weather_tool()});
    body["tool_choice"] = {{"type", "function"}, {"function", {{"name", "get_weather"}}}};
    json r = post("/v1/chat/completions", body);
    const auto & msg = r["choices"][0]["message"];
    ASSERT_EQ(msg["tool_calls"].size(), 1u) << r.dump();
    EXPECT_EQ(r["choices"][0]["finish_reason"], "tool_calls");
    const auto & call = msg["tool_calls"][0];
    EXPECT_EQ(call["type"], "function");
    EXPECT_FALSE(call["id"].get<std::string>().empty());
    EXPECT_EQ(call["function"]["name"], "get_weather");
    ASSERT_TRUE(call["function"]["arguments"].is_string()) << "OpenAI arguments are a JSON string";
    json args = json::parse(call["function"]["arguments"].get<std::string>());
    EXPECT_TRUE(args["city"].is_string());

    // Send the tool result back; the conversation continues.
    json next = chat("Weather in Paris?", 4);
    next["tools"] = json::array({weather_tool()});
    next["messages"].push_back(msg);
    next["messages"].push_back({{"role", "tool"}, {"tool_call_id", call["id"]}, {"content", "{\"temp\":21}"}});
    json r2 = post("/v1/chat/completions", next);
    EXPECT_EQ(r2["object"], "chat.completion");

    // Streamed: every tool-call delta carries its index; the first one also id, type and name.
    body["stream"] = true;
    auto res = client().Post("/v1/chat/completions", body.dump(), "application/json");
    bool done = false;
    auto events = sse_events(res->body, done);
    EXPECT_TRUE(done);
    bool saw_first = false;
    std::string args_text;
    for (const auto & ev : events) {
        if (ev["choices"].empty() || !ev["choices"][0]["delta"].contains("tool_calls")) continue;
        for (const auto & tc : ev["choices"][0]["delta"]["tool_calls"]) {
            ASSERT_TRUE(tc.contains("index"));
            if (!saw_first) {
                EXPECT_TRUE(tc.contains("id"));
                EXPECT_EQ(tc["type"], "function");
                EXPECT_EQ(tc["function"]["name"], "get_weather");
                saw_first = true;
            }
            args_text += tc["function"].value("arguments", "");
        }
    }
    EXPECT_TRUE(saw_first);
    EXPECT_TRUE(json::parse(args_text, nullptr, false).is_object()) << args_text;
    EXPECT_EQ(events[events.size() - 1]["choices"][0]["finish_reason"], "tool_calls");
}

TEST_F(serve, completions_with_echo_and_logprobs) {
    json r = post("/v1/completions", {{"model", "demo"}, {"prompt", "Once upon"}, {"max_tokens", 4}, {"echo", true}, {"logprobs", 2}, {"temperature", 0}});
    EXPECT_EQ(r["object"], "text_completion");
    std::string text = r["choices"][0]["text"];
    EXPECT_EQ(text.rfind("Once upon", 0), 0u) << text;
    EXPECT_EQ(r["choices"][0]["logprobs"]["tokens"].size(), 4u);
    EXPECT_EQ(r["choices"][0]["logprobs"]["top_logprobs"][0].size(), 2u);
    json two = post("/v1/completions", {{"model", "demo"}, {"prompt", {"a", "b"}}, {"max_tokens", 2}, {"n", 2}});
    EXPECT_EQ(two["choices"].size(), 4u);
}

TEST_F(serve, embeddings_float_and_base64) {
    json f = post("/v1/embeddings", {{"model", "embed"}, {"input", {"hello world", "second"}}, {"encoding_format", "float"}});
    ASSERT_EQ(f["data"].size(), 2u);
    auto v = f["data"][0]["embedding"].get<std::vector<float>>();
    ASSERT_EQ(v.size(), 128u);
    double norm = 0;
    for (float x : v) norm += x * x;
    EXPECT_NEAR(std::sqrt(norm), 1.0, 1e-3);
    json b = post("/v1/embeddings", {{"model", "embed"}, {"input", "hello world"}, {"encoding_format", "base64"}});
    std::string bytes = base64::decode(b["data"][0]["embedding"].get<std::string>());
    ASSERT_EQ(bytes.size(), 128 * sizeof(float));
    std::vector<float> decoded(128);
    std::memcpy(decoded.data(), bytes.data(), bytes.size());
    for (size_t i = 0; i < 128; ++i) EXPECT_FLOAT_EQ(decoded[i], v[i]);
    json d = post("/v1/embeddings", {{"model", "embed"}, {"input", "hello world"}, {"dimensions", 32}});
    EXPECT_EQ(d["data"][0]["embedding"].size(), 32u);
}

TEST_F(serve, models_and_health) {
    auto res = client().Get("/v1/models");
    ASSERT_TRUE(res);
    json m = json::parse(res->body);
    EXPECT_EQ(m["object"], "list");
    std::vector<std::string> ids;
    for (const auto & e : m["data"]) ids.push_back(e["id"]);
    EXPECT_EQ(ids, (std::vector<std::string>{"demo", "embed"}));
    EXPECT_EQ(client().Get("/v1/models/demo")->status, 200);
    EXPECT_EQ(client().Get("/v1/models/nope")->status, 404);
    EXPECT_EQ(client().Get("/v1/health/live")->status, 200);
    EXPECT_EQ(client().Get("/v1/health/ready")->status, 200);
    EXPECT_EQ(client(true).Get("/")->body, "Ollama is running");
    EXPECT_TRUE(json::parse(client(true).Get("/api/version")->body)["version"].is_string());
}

TEST_F(serve, bad_requests_get_clear_errors_and_the_server_keeps_serving) {
    auto res = client().Post("/v1/chat/completions", "{not json", "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400);
    json e = json::parse(res->body);
    EXPECT_EQ(e["error"]["type"], "invalid_request_error");
    EXPECT_NE(e["error"]["message"].get<std::string>().find("JSON"), std::string::npos);

    json unknown = post("/v1/chat/completions", {{"model", "nope"}, {"messages", {{{"role", "user"}, {"content", "x"}}}}}, 404);
    EXPECT_NE(unknown["error"]["message"].get<std::string>().find("nope"), std::string::npos);

    json no_messages = post("/v1/chat/completions", {{"model", "demo"}}, 400);
    EXPECT_EQ(no_messages["error"]["param"], "messages");
    json empty = post("/v1/chat/completions", {{"model", "demo"}, {"messages", json::array()}}, 400);
    EXPECT_EQ(empty["error"]["param"], "messages");
    json hot = chat("x", 2);
    hot["temperature"] = "hot";
    EXPECT_EQ(post("/v1/chat/completions", hot, 400)["error"]["param"], "temperature");
    json absurd = chat("x", 2);
    absurd["max_tokens"] = 1e30;
    EXPECT_EQ(post("/v1/chat/completions", absurd, 400)["error"]["param"], "max_tokens");
    json bad_role = {{"model", "demo"}, {"messages", {{{"role", "wizard"}, {"content", "x"}}}}};
    EXPECT_EQ(post("/v1/chat/completions", bad_role, 400)["error"]["param"], "messages");
    std::string invalid_utf8 = R"({"model":"demo","messages":[{"role":"user","content":"bad )" + std::string("\xC3\x28") + R"("}]})";
    EXPECT_EQ(client().Post("/v1/chat/completions", invalid_utf8, "application/json")->status, 400);
    EXPECT_EQ(post("/v1/embeddings", {{"model", "demo"}, {"input", "x"}}, 400)["error"]["type"], "invalid_request_error");
    EXPECT_EQ(client().Get("/no/such/route")->status, 404);

    EXPECT_EQ(post("/v1/chat/completions", chat("still there?", 2))["usage"]["completion_tokens"], 2);
}

TEST(serve_cli, run_prints_an_answer_and_version_works) {
    const rc::test::temp_dir tmp("run");
    const auto & dir = tmp.path();
    std::filesystem::create_symlink(model_path("tiny-chat"), dir / "demo.gguf");
    const auto run = rc::test::run_command(
        {RC_RUSTYCAGE_BIN, "run", "demo", "Hello", "--models-dir", dir.string(), "-n", "8", "--seed", "1", "--log-level", "error"});
    EXPECT_EQ(run.code, 0) << run.err;
    EXPECT_GT(run.out.size(), 1u);
    const auto version_run = rc::test::run_command({RC_RUSTYCAGE_BIN, "version"});
    EXPECT_EQ(version_run.code, 0) << version_run.err;
    const std::string & version = version_run.out;
    EXPECT_NE(version.find("80fb11ac73e6"), std::string::npos) << version;
}

TEST(serve_cli, the_console_fleet_flags_read_their_own_variables_and_errors_name_them) {
    // serve's --fleet-etcd-… read RUSTYCAGE_FLEET_ETCD_… (never the agent's RUSTYCAGE_ETCD_…), and a
    // refusal names serve's flag, not the agent's. Plain http off loopback is refused before any port opens.
    const rc::test::temp_dir tmp("fleet-flags");
    const std::vector<std::string> serve = {RC_RUSTYCAGE_BIN, "serve", "--models-dir", tmp.path().string(), "--openai-port", "0", "--ollama-port", "-1"};
    auto plain = rc::test::run_command(serve, {{"RUSTYCAGE_FLEET_ETCD", "http://192.0.2.7:2379"}});
    EXPECT_EQ(plain.code, 1) << plain.out << plain.err;
    EXPECT_NE(plain.err.find("--fleet-etcd-insecure"), std::string::npos) << plain.err;
    EXPECT_EQ(plain.err.find("--etcd-insecure"), std::string::npos) << plain.err;
    // A user without a password file is refused before the endpoint is checked: from serve's own
    // variable, and never from the agent's.
    auto own_vars = rc::test::run_command(serve, {{"RUSTYCAGE_FLEET_ETCD", "http://192.0.2.7:2379"}, {"RUSTYCAGE_FLEET_ETCD_USER", "a"}});
    EXPECT_EQ(own_vars.code, 1);
    EXPECT_NE(own_vars.err.find("--fleet-etcd-user needs --fleet-etcd-password-file"), std::string::npos) << own_vars.err;
    auto agent_vars = rc::test::run_command(serve, {{"RUSTYCAGE_FLEET_ETCD", "http://192.0.2.7:2379"}, {"RUSTYCAGE_ETCD_USER", "a"}});
    EXPECT_EQ(agent_vars.code, 1);
    EXPECT_EQ(agent_vars.err.find("-user needs"), std::string::npos) << "the agent's variable is not serve's: " << agent_vars.err;
    EXPECT_NE(agent_vars.err.find("--fleet-etcd-insecure"), std::string::npos) << agent_vars.err;
}

TEST(serve_cli, sigterm_stops_the_server_cleanly) {
    rc::test::server_process s({{"demo", model_path("tiny-chat")}});
    ASSERT_TRUE(s.started());
    EXPECT_EQ(s.stop(SIGTERM), 0);
}

TEST_F(serve, responses_api_plain_streamed_and_structured) {
    json r = post("/v1/responses", {{"model", "demo"}, {"instructions", "Be brief."}, {"input", "Hello"}, {"max_output_tokens", 5}, {"temperature", 0}});
    EXPECT_EQ(r["object"], "response");
    EXPECT_EQ(r["status"], "incomplete");
    EXPECT_EQ(r["incomplete_details"]["reason"], "max_output_tokens");
    ASSERT_EQ(r["output"].size(), 1u);
    EXPECT_EQ(r["output"][0]["type"], "message");
    EXPECT_EQ(r["output"][0]["content"][0]["type"], "output_text");
    EXPECT_FALSE(r["output"][0]["content"][0]["text"].get<std::string>().empty());
    EXPECT_EQ(r["usage"]["output_tokens"], 5);

    json s = {{"model", "demo"}, {"input", json::array({{{"role", "user"}, {"content", json::array({{{"type", "input_text"}, {"text", "Hi"}}})}}})},
              {"max_output_tokens", 4}, {"stream", true}};
    auto res = client().Post("/v1/responses", s.dump(), "application/json");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200);
    std::istringstream in(res->body);
    std::string line, deltas;
    std::vector<std::string> types;
    int expected_seq = 0;
    while (std::getline(in, line)) {
        if (line.rfind("data: ", 0) != 0) continue;
        json ev = json::parse(line.substr(6));
        EXPECT_EQ(ev["sequence_number"], expected_seq++);
        types.push_back(ev["type"]);
        if (ev["type"] == "response.output_text.delta") deltas += ev["delta"].get<std::string>();
    }
    ASSERT_GE(types.size(), 4u);
    EXPECT_EQ(types.front(), "response.created");
    EXPECT_TRUE(types.back() == "response.completed" || types.back() == "response.incomplete") << types.back();
    EXPECT_FALSE(deltas.empty());

    json structured = post("/v1/responses", {{"model", "demo"}, {"input", "A person"}, {"max_output_tokens", 200}, {"temperature", 1.0}, {"seed", 3},
                                             {"text", {{"format", {{"type", "json_schema"}, {"name", "p"},
                                                                    {"schema", {{"type", "object"}, {"properties", {{"n", {{"type", "integer"}}}}}, {"required", {"n"}}}}}}}}});
    json parsed = json::parse(structured["output"][0]["content"][0]["text"].get<std::string>(), nullptr, false);
    EXPECT_TRUE(parsed.is_object() && parsed["n"].is_number_integer()) << structured.dump();
    EXPECT_EQ(post("/v1/responses", {{"model", "demo"}, {"input", "x"}, {"previous_response_id", "resp_1"}}, 400)["error"]["param"], "previous_response_id");
}
