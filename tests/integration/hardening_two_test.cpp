// The second held-out probe (issue 26) against the real `rustycage serve`: what sat behind our
// parsers — llama.cpp's template engine, its schema converter and grammar parser, the HTTP framing,
// the tokenizer — reached with one request each. Every case must end in a clear 4xx, a quick
// answer or a closed connection, with the server still serving and its memory back near where it
// was. Raw sockets where a client library would hide the framing.
#include <cpp-httplib/httplib.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/raw_conn.h"
#include "support/server_process.h"
#include "support/temp_dir.h"
#include "test_models.h"

using json = nlohmann::json;
using rc::test::model_path;
using rc::test::raw_conn;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

class hardening_two : public ::testing::Test {
  protected:
    static void SetUpTestSuite() { server_ = new rc::test::server_process({{"demo", model_path("tiny-chat")}}); }
    static void TearDownTestSuite() {
        delete server_;
        server_ = nullptr;
    }
    void SetUp() override { ASSERT_TRUE(server_ && server_->started()); }

    static int port() { return server_->openai_port(); }
    static httplib::Client client() {
        httplib::Client c("127.0.0.1", port());
        c.set_read_timeout(60);
        c.set_write_timeout(60);
        return c;
    }
    static httplib::Result post(const std::string & path, const std::string & body) {
        auto c = client();
        return c.Post(path, body, "application/json");
    }
    // The server answers an ordinary chat: it did not crash or wedge.
    static void still_serving() {
        auto r = post("/v1/chat/completions", R"({"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":2})");
        ASSERT_TRUE(r) << "no answer: did the server crash?";
        EXPECT_EQ(r->status, 200) << r->body;
    }
    // Resident memory of the server now (VmRSS) or at its peak so far (VmHWM), in bytes.
    static uint64_t status_bytes(const std::string & key) {
        std::ifstream in("/proc/" + std::to_string(server_->pid()) + "/status");
        std::string line;
        while (std::getline(in, line)) {
            if (line.rfind(key, 0) == 0) return std::stoull(line.substr(key.size())) * 1024;
        }
        return 0;
    }
    static uint64_t rss() { return status_bytes("VmRSS:"); }
    static uint64_t peak_rss() { return status_bytes("VmHWM:"); }
    // The whole response of a raw exchange (until the server closes or `limit`).
    static std::string exchange(const std::string & bytes, bool half_close, std::chrono::milliseconds limit = 30s) {
        raw_conn c(port());
        EXPECT_TRUE(c.ok());
        c.send(bytes);
        if (half_close) c.shut_write();
        return c.read_until([](const std::string &) { return false; }, limit);
    }

    static inline rc::test::server_process * server_ = nullptr;
};

size_t count_of(const std::string & hay, const std::string & needle) {
    size_t n = 0;
    for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
    return n;
}

std::string chat_with_arguments(const std::string & arguments) {
    json call = {{"id", "1"}, {"type", "function"}, {"function", {{"name", "f"}, {"arguments", arguments}}}};
    return json{{"model", "demo"}, {"max_tokens", 2},
                {"messages", {{{"role", "user"}, {"content", "x"}}, {{"role", "assistant"}, {"tool_calls", {call}}}}}}
        .dump();
}

}  // namespace

// Item 1: 100,000 '[' inside a tool call's `arguments` string passed the body's depth check and
// overflowed the stack while llama.cpp parsed it to render the template.
TEST_F(hardening_two, nested_json_inside_tool_call_arguments_is_a_400_on_every_route) {
    const std::string deep(100000, '[');
    auto chat = post("/v1/chat/completions", chat_with_arguments(deep));
    ASSERT_TRUE(chat) << "the server crashed";
    EXPECT_EQ(chat->status, 400) << chat->body.substr(0, 300);
    EXPECT_NE(chat->body.find("tool_calls[0].function.arguments"), std::string::npos) << chat->body.substr(0, 300);
    EXPECT_NE(chat->body.find("nested deeper than 64"), std::string::npos) << chat->body.substr(0, 300);

    auto applied = post("/apply-template", chat_with_arguments(deep));
    ASSERT_TRUE(applied) << "the server crashed";
    EXPECT_EQ(applied->status, 400) << applied->body.substr(0, 300);

    json responses = {{"model", "demo"}, {"max_output_tokens", 2},
                      {"input", {{{"type", "function_call"}, {"call_id", "c1"}, {"name", "f"}, {"arguments", deep}},
                                 {{"type", "function_call_output"}, {"call_id", "c1"}, {"output", "ok"}}}}};
    auto resp = post("/v1/responses", responses.dump());
    ASSERT_TRUE(resp) << "the server crashed";
    EXPECT_EQ(resp->status, 400) << resp->body.substr(0, 300);
    EXPECT_NE(resp->body.find("input[0].arguments"), std::string::npos) << resp->body.substr(0, 300);

    // Arguments that are JSON of ordinary depth still render.
    auto fine = post("/apply-template", chat_with_arguments(R"({"a":[[1,2],[3]]})"));
    ASSERT_TRUE(fine);
    EXPECT_EQ(fine->status, 200) << fine->body.substr(0, 300);
    still_serving();
}

// Item 2: a self-calling macro crashed the server within 2 s; range(100000000) ran for minutes and
// took 4 GB. Both now fail their budget at the quarantine's load: the create is refused with the
// limit named, nothing is served under that name, and the server keeps its memory.
TEST_F(hardening_two, hostile_templates_fail_their_budget_at_create) {
    // The baseline: a serving server that has already checked two created models (the quarantine's
    // test loads keep ~40 MiB of their own over the first two, whatever the template).
    for (const char * name : {"benign1", "benign2"}) {
        auto benign = post("/api/create", json{{"model", name}, {"from", "demo"}, {"template", "{% for m in messages %}{{ m.content }}{% endfor %}"}, {"stream", false}}.dump());
        ASSERT_TRUE(benign);
        ASSERT_EQ(benign->status, 200) << benign->body;
    }
    still_serving();
    const uint64_t before = rss(), peak_before = peak_rss();
    struct hostile {
        const char * name;
        const char * text;
        const char * limit;
    };
    for (const hostile & h : {hostile{"recursive", "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "nesting is deeper than"},
                              hostile{"looping", "{% for i in range(100000000) %}x{% endfor %}", "values"},
                              hostile{"doubling", "{% set s = 'ab' %}{% for i in range(40) %}{% set s = s ~ s %}{% endfor %}{{ s }}", "string of"}}) {
        const auto t0 = clock_type::now();
        auto r = post("/api/create", json{{"model", h.name}, {"from", "demo"}, {"template", h.text}, {"stream", false}}.dump());
        ASSERT_TRUE(r) << h.name << ": the server crashed";
        EXPECT_EQ(r->status, 400) << h.name << ": " << r->body;
        EXPECT_NE(r->body.find("exceeded its budget"), std::string::npos) << h.name << ": " << r->body;
        EXPECT_NE(r->body.find(h.limit), std::string::npos) << h.name << ": " << r->body;
        EXPECT_LT(clock_type::now() - t0, 20s) << h.name;
        auto chat = post("/api/chat", json{{"model", h.name}, {"stream", false}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}}.dump());
        ASSERT_TRUE(chat);
        EXPECT_EQ(chat->status, 400) << h.name << " must not be servable: " << chat->body;
        EXPECT_NE(chat->body.find("quarantin"), std::string::npos) << chat->body;
    }
    // Each create also test-loads the model, which keeps ~10-25 MiB over the first few loads
    // whatever the template (benign creates grow it as much): the renders themselves must neither
    // have peaked anywhere near the gigabytes they took before nor stayed.
    EXPECT_LT(peak_rss(), peak_before + (512u << 20)) << "peak";
    EXPECT_LT(rss(), before + (64u << 20)) << "the renders' memory was not given back (baseline " << (before >> 20) << " MiB)";
    still_serving();
}

// Item 3: a chunked body on GET (or any bodiless method) was read into memory without a limit, also
// before the API key was checked. It is refused before a byte of it is read, and the connection
// closes: the client cannot go on sending.
TEST_F(hardening_two, a_body_on_a_bodiless_request_is_refused_unread) {
    still_serving();
    const uint64_t before = rss();
    for (const char * method : {"GET /health", "GET /v1/models", "HEAD /health", "OPTIONS /v1/models", "PUT /v1/models", "PATCH /health"}) {
        raw_conn c(port());
        ASSERT_TRUE(c.ok());
        ASSERT_TRUE(c.send(std::string(method) + " HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"));
        // 64 MiB of chunks: the server must stop reading long before, not buffer them.
        std::string chunk = "100000\r\n" + std::string(1 << 20, 'a') + "\r\n";
        std::string body;
        for (int i = 0; i < 64; ++i) body += chunk;
        const size_t sent = c.send_within(body, 20s);
        std::string in = c.read_until([](const std::string &) { return false; }, 10s);
        EXPECT_NE(in.find("HTTP/1.1 400"), std::string::npos) << method << ": " << in.substr(0, 200);
        EXPECT_TRUE(c.closed()) << method << ": the connection stayed open";
        EXPECT_LT(sent, body.size()) << method << ": the server read all 64 MiB";
    }
    EXPECT_LT(rss(), before + (64u << 20)) << "a refused body was buffered";
    still_serving();
}

// Item 4: a pattern with {m,n}, m > n, never returned and grew without bound. The schema's
// contradictions are 400s before any grammar is built (grammar_limits_test has the GBNF side).
TEST_F(hardening_two, schemas_that_contradict_themselves_are_400s_at_once) {
    const auto t0 = clock_type::now();
    for (const json & schema : {json{{"type", "string"}, {"pattern", "^a{5,2}$"}},
                                json{{"type", "string"}, {"minLength", 5}, {"maxLength", 2}},
                                json{{"type", "array"}, {"items", {{"type", "integer"}}}, {"minItems", 3}, {"maxItems", 1}},
                                json{{"type", "string"}, {"pattern", "^a{100000}$"}}}) {
        json body = {{"model", "demo"}, {"max_tokens", 2}, {"messages", {{{"role", "user"}, {"content", "x"}}}},
                     {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "s"}, {"schema", schema}}}}}};
        auto r = post("/v1/chat/completions", body.dump());
        ASSERT_TRUE(r) << schema.dump();
        EXPECT_EQ(r->status, 400) << schema.dump() << ": " << r->body;
    }
    // Ollama's `format` takes a schema too.
    auto ollama = post("/api/generate", R"({"model":"demo","prompt":"x","stream":false,"format":{"type":"string","pattern":"^a{5,2}$"}})");
    ASSERT_TRUE(ollama);
    EXPECT_EQ(ollama->status, 400) << ollama->body;
    EXPECT_LT(clock_type::now() - t0, 20s);
    still_serving();
}

// Item 5: 30 MB prompts to the lookup routes, /tokenize and /apply-template cost up to a gigabyte
// and minutes. A prompt longer than the context could hold is a 400 before it is tokenized, and the
// server is back to its size after (a server of its own: the others' model creates move the baseline).
TEST(hardening_two_prompts, prompts_longer_than_the_context_could_hold_are_refused_before_tokenizing) {
    rc::test::server_process s({{"demo", model_path("tiny-chat")}});
    ASSERT_TRUE(s.started());
    httplib::Client c("127.0.0.1", s.openai_port());
    c.set_read_timeout(60);
    c.set_write_timeout(60);
    auto rss = [&] {
        std::ifstream in("/proc/" + std::to_string(s.pid()) + "/status");
        std::string line;
        while (std::getline(in, line))
            if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
        return 0ull;
    };
    auto warm = c.Post("/v1/chat/completions", R"({"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":2})", "application/json");
    ASSERT_TRUE(warm);
    ASSERT_EQ(warm->status, 200);
    const uint64_t before = rss();
    const std::string huge(30u << 20, 'a');
    const auto t0 = clock_type::now();
    for (const auto & [path, body] : std::vector<std::pair<std::string, json>>{
             {"/tokenize", {{"model", "demo"}, {"content", huge}, {"with_pieces", true}}},
             {"/v1/kv/prefetch", {{"model", "demo"}, {"prompt", huge}}},
             {"/v1/kv/lookup", {{"model", "demo"}, {"prompt", huge}}},
             {"/apply-template", {{"model", "demo"}, {"messages", {{{"role", "user"}, {"content", huge}}}}}},
             {"/v1/chat/completions", {{"model", "demo"}, {"messages", {{{"role", "user"}, {"content", huge}}}}}}}) {
        auto r = c.Post(path, body.dump(), "application/json");
        ASSERT_TRUE(r) << path;
        EXPECT_EQ(r->status, 400) << path << ": " << r->body.substr(0, 300);
        EXPECT_NE(r->body.find("context could hold"), std::string::npos) << path << ": " << r->body.substr(0, 300);
    }
    EXPECT_LT(clock_type::now() - t0, 60s);
    EXPECT_LT(rss(), before + before / 10) << "baseline " << (before >> 20) << " MiB";
    // An ordinary prompt still tokenizes.
    auto ok = c.Post("/tokenize", R"({"model":"demo","content":"hello there","with_pieces":true})", "application/json");
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->status, 200);
}

// Item 6: objects with many keys cost quadratic time to parse (50,000 keys: 28 s). The keys' cost
// is bounded before parsing: a 413 at once.
TEST_F(hardening_two, objects_with_too_many_keys_are_refused_before_parsing) {
    json many = json::object();
    for (int i = 0; i < 50000; ++i) many["k" + std::to_string(i)] = i;
    json body = {{"model", "demo"}, {"messages", {{{"role", "user"}, {"content", "x"}}}}, {"unused", many}};
    const auto t0 = clock_type::now();
    auto r = post("/v1/chat/completions", body.dump());
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 413) << r->body;
    EXPECT_NE(r->body.find("too many keys"), std::string::npos) << r->body;
    EXPECT_LT(clock_type::now() - t0, 5s);

    json fine = json::object();
    for (int i = 0; i < 2000; ++i) fine["k" + std::to_string(i)] = i;
    body["unused"] = fine;
    body["max_tokens"] = 1;
    auto ok = post("/v1/chat/completions", body.dump());
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->status, 200) << ok->body.substr(0, 300);
}

// Item 9: after a 400 for a malformed header line the rest of the bytes ran as new requests (10,000
// lines gave 1,000 400s): behind a proxy, request smuggling. The connection closes after the 400.
TEST_F(hardening_two, a_framing_error_closes_the_connection) {
    std::string bytes = "GET /health HTTP/1.1\r\nHost: x\r\n";
    for (int i = 0; i < 1000; ++i) bytes += "a:\r\nbad line without a colon\r\n";
    bytes += "\r\nGET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n";
    raw_conn c(port());
    ASSERT_TRUE(c.ok());
    c.send_within(bytes, 10s);
    std::string in = c.read_until([](const std::string &) { return false; }, 10s);
    EXPECT_EQ(count_of(in, "HTTP/1.1 "), 1u) << in.substr(0, 500);
    EXPECT_NE(in.find("HTTP/1.1 400"), std::string::npos) << in.substr(0, 500);
    EXPECT_TRUE(c.closed());
    still_serving();
}

// Item 10: a client that sends a whole request and half-closes got "499". It gets its answer; a
// client that closes the socket still cancels its request (request_path_test covers that).
TEST_F(hardening_two, a_half_closed_client_still_gets_its_completion) {
    // Long enough that the server looks for the client (every 200 ms) while it generates: no
    // end-of-generation token may end it early.
    auto m = rc::test::shared_model("tiny-chat");
    ASSERT_TRUE(m);
    json bias = json::object();
    for (llama_token t = 0; t < m->info().n_vocab; ++t) {
        if (m->is_eog(t)) bias[std::to_string(t)] = -100;
    }
    const std::string body = json{{"model", "demo"}, {"prompt", "Once upon"}, {"max_tokens", 300}, {"temperature", 0}, {"logit_bias", bias}}.dump();
    std::string in = exchange("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
                                  std::to_string(body.size()) + "\r\n\r\n" + body,
                              /*half_close=*/true);
    EXPECT_NE(in.find("HTTP/1.1 200 OK"), std::string::npos) << in.substr(0, 500);
    EXPECT_NE(in.find("\"completion_tokens\":300"), std::string::npos) << in.substr(0, 800);
}

// Item 11: "Content-Length: 00077" got no reply; other non-numbers are refused, never guessed at.
TEST_F(hardening_two, content_length_is_parsed_strictly) {
    const std::string body = R"({"model":"demo","content":"hello"})";
    char padded[16];
    std::snprintf(padded, sizeof padded, "%05zu", body.size());
    std::string in = exchange("POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " + std::string(padded) +
                                  "\r\nConnection: close\r\n\r\n" + body,
                              false);
    EXPECT_NE(in.find("HTTP/1.1 200"), std::string::npos) << in.substr(0, 300);
    EXPECT_NE(in.find("\"tokens\""), std::string::npos) << in.substr(0, 300);
    for (const char * bad : {"+34", "34, 34", "0x22", "3 4", "99999999999999999999"}) {
        std::string r = exchange("POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " + std::string(bad) +
                                     "\r\n\r\n" + body,
                                 false, 10s);
        EXPECT_NE(r.find("HTTP/1.1 400"), std::string::npos) << bad << ": " << r.substr(0, 300);
        EXPECT_EQ(count_of(r, "HTTP/1.1 "), 1u) << bad;
    }
}

// Item 7: 65-256 slow connections made every new client wait ~7 s for a thread. A fresh client is
// served at once beside 200 of them.
TEST_F(hardening_two, slow_connections_do_not_delay_a_fresh_client) {
    std::vector<std::unique_ptr<raw_conn>> slow;
    for (int i = 0; i < 200; ++i) {
        slow.push_back(std::make_unique<raw_conn>(port()));
        ASSERT_TRUE(slow.back()->ok());
        ASSERT_TRUE(slow.back()->send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"));
    }
    std::vector<double> ms;
    for (int i = 0; i < 5; ++i) {
        const auto t0 = clock_type::now();
        std::string in = exchange("GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", false, 10s);
        ms.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - t0).count());
        EXPECT_NE(in.find("HTTP/1.1 200"), std::string::npos) << in.substr(0, 200);
    }
    std::sort(ms.begin(), ms.end());
    RecordProperty("fresh_client_median_ms", std::to_string(ms[2]));
    EXPECT_LT(ms[2], 1000.0) << "a fresh client waited for a thread (the issue measured ~7 s)";
}

// Item 11: streams still open at the end of --shutdown-timeout were cut without an end, and the
// process exited with status 1. They now end with an error event and the stream's last chunk, and
// the exit is clean.
TEST(hardening_two_shutdown, streams_open_at_the_shutdown_deadline_end_with_an_error_event) {
    rc::test::server_process s({{"demo", model_path("tiny-chat")}}, {"--shutdown-timeout", "1", "--ctx-size", "40000", "--max-tokens", "40000"});
    ASSERT_TRUE(s.started());
    const std::string body = R"({"model":"demo","stream":true,"max_tokens":39000,"messages":[{"role":"user","content":"go on"}]})";
    raw_conn c(s.openai_port());
    ASSERT_TRUE(c.send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                       "\r\n\r\n" + body));
    // Streaming has begun before the shutdown.
    c.read_until([](const std::string & in) { return in.find("data: ") != std::string::npos; }, 60s);
    std::thread stopper([&] { EXPECT_EQ(s.stop(SIGTERM), 0) << "the exit status after ending the streams"; });
    std::string in = c.read_until([](const std::string &) { return false; }, 30s);
    stopper.join();
    EXPECT_TRUE(c.closed());
    EXPECT_NE(in.find("shutting down"), std::string::npos) << in.substr(in.size() > 600 ? in.size() - 600 : 0);
    EXPECT_NE(in.find("\r\n0\r\n\r\n"), std::string::npos) << "the chunked stream was cut, not ended";
}

// Requests waiting when the server is told to stop — queued behind a busy slot, or sent on a
// connection not read yet — finish within --shutdown-timeout; none is cut (issue 28's drain). The
// client waits as long as the server may drain, not a guess of how fast four requests run: on a
// loaded two-core machine they took longer than the 120 s this test once allowed each.
TEST(hardening_two_shutdown, requests_waiting_at_a_shutdown_finish_when_the_drain_has_time_for_them) {
    constexpr auto drain = 480s;  // under the test's own 600 s
    rc::test::server_process s({{"demo", model_path("tiny-chat")}}, {"--parallel", "1", "--shutdown-timeout", std::to_string(drain.count())});
    ASSERT_TRUE(s.started());
    const std::string body = R"({"model":"demo","stream":true,"max_tokens":200,"temperature":0,"messages":[{"role":"user","content":"go on"}]})";
    const std::string request = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n"
                                "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    std::vector<std::unique_ptr<raw_conn>> conns;
    for (int i = 0; i < 4; ++i) {
        conns.push_back(std::make_unique<raw_conn>(s.openai_port()));
        ASSERT_TRUE(conns.back()->ok());
        ASSERT_TRUE(conns.back()->send(request));
    }
    conns[0]->read_until([](const std::string & in) { return in.find("data: ") != std::string::npos; }, 60s);
    std::thread stopper([&] { EXPECT_EQ(s.stop(SIGTERM, drain + 10s), 0); });
    const auto deadline = std::chrono::steady_clock::now() + drain;
    int finished = 0;
    for (auto & c : conns) {
        const auto left = std::chrono::duration_cast<std::chrono::seconds>(deadline - std::chrono::steady_clock::now());
        std::string in = c->read_until([](const std::string & got) { return got.find("\r\n0\r\n\r\n") != std::string::npos; }, std::max(left, 1s));
        EXPECT_NE(in.find("HTTP/1.1 200"), std::string::npos) << in.substr(0, 300);
        EXPECT_EQ(in.find("shutting down"), std::string::npos) << in.substr(in.size() > 600 ? in.size() - 600 : 0);
        const bool done = in.find("data: [DONE]") != std::string::npos;
        EXPECT_TRUE(done) << "ended without [DONE]: " << in.size() << " bytes, the last: " << in.substr(in.size() > 400 ? in.size() - 400 : 0);
        finished += done ? 1 : 0;
    }
    stopper.join();
    EXPECT_EQ(finished, 4) << "every waiting request ran to its end";
}

// Item 2, from a file: a GGUF in the models directory carrying a hostile template. Listing it
// (/api/tags, /api/show read the template to report capabilities) and asking it to chat end in
// answers, and the model beside it keeps serving.
TEST(hardening_two_gguf, a_model_file_with_a_hostile_template_cannot_crash_the_server) {
    std::ifstream in(model_path("tiny-chat"), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    const std::string key = "tokenizer.chat_template";
    size_t at = bytes.find(key);
    ASSERT_NE(at, std::string::npos);
    at += key.size() + 4;  // the key, then its u32 value type (string)
    uint64_t len = 0;
    std::memcpy(&len, bytes.data() + at, sizeof len);
    const std::string hostile = "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}";
    ASSERT_GT(len, hostile.size());
    std::string replacement = hostile + std::string(len - hostile.size(), ' ');  // the same length: the file stays valid
    std::copy(replacement.begin(), replacement.end(), bytes.begin() + std::ptrdiff_t(at + 8));
    const rc::test::temp_dir dir("hostile");  // declared before the server, so it outlives the server's link to the file
    const auto path = dir.path() / "hostile.gguf";
    std::ofstream(path, std::ios::binary) << bytes;

    rc::test::server_process s({{"demo", model_path("tiny-chat")}, {"evil", path.string()}});
    ASSERT_TRUE(s.started());
    httplib::Client c("127.0.0.1", s.openai_port());
    c.set_read_timeout(60);
    auto tags = c.Get("/api/tags");
    ASSERT_TRUE(tags) << "the server crashed listing the models";
    EXPECT_EQ(tags->status, 200);
    EXPECT_NE(tags->body.find("evil"), std::string::npos);
    auto show = c.Post("/api/show", R"({"model":"evil"})", "application/json");
    ASSERT_TRUE(show) << "the server crashed showing the model";
    EXPECT_EQ(show->status, 200) << show->body;
    auto chat = c.Post("/v1/chat/completions", R"({"model":"evil","messages":[{"role":"user","content":"hi"}],"max_tokens":2})", "application/json");
    ASSERT_TRUE(chat) << "the server crashed loading the model";
    EXPECT_GE(chat->status, 400) << chat->body;
    EXPECT_NE(chat->body.find("exceeded its budget"), std::string::npos) << chat->body;
    auto fine = c.Post("/v1/chat/completions", R"({"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":2})", "application/json");
    ASSERT_TRUE(fine);
    EXPECT_EQ(fine->status, 200) << fine->body;
}
