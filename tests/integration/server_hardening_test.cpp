// The HTTP layer and start-up of the real `rustycage serve` under hostile or careless use (issue 10):
// pipelined requests, slowloris clients, the connection cap, exclusive bind, API-key handling and
// start-up validation of path flags. Raw sockets where a client library would hide the behaviour.
#include <arpa/inet.h>
#include <cpp-httplib/httplib.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "child_process.h"
#include "support/raw_conn.h"
#include "support/server_process.h"
#include "support/temp_dir.h"
#include "test_models.h"

using json = nlohmann::json;
using rc::test::model_path;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

using clock_type = std::chrono::steady_clock;
using rc::test::raw_conn;

size_t count_of(const std::string & hay, const std::string & needle) {
    size_t n = 0;
    for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
    return n;
}

const char * partial_header = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n";

// `n` connections that sent half a header, holding a server capped at `n` full: returned once a
// probe is refused (each held connection occupies its slot once its thread picked it up).
std::vector<std::unique_ptr<raw_conn>> hold_the_cap(int port, int n) {
    std::vector<std::unique_ptr<raw_conn>> held;
    for (int i = 0; i < n; ++i) {
        held.push_back(std::make_unique<raw_conn>(port));
        EXPECT_TRUE(held.back()->send(partial_header));
    }
    EXPECT_TRUE(rc::test::poll_until([&] {
        raw_conn probe(port);
        probe.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
        return probe.read_until([](const std::string & s) { return s.find("\r\n\r\n") != std::string::npos; }, 5s).find("HTTP/1.1 503") != std::string::npos;
    }, 30s));
    return held;
}

class server_hardening : public ::testing::Test {
  protected:
    static std::unique_ptr<rc::test::server_process> serve(std::vector<std::string> args = {}) {
        return std::make_unique<rc::test::server_process>(std::vector<std::pair<std::string, std::string>>{{"demo", model_path("tiny-chat")}},
                                                          std::move(args));
    }
    // `rustycage serve ARGS` expected to refuse to start: its exit code and what it printed.
    static rc::test::cli_result serve_fails(std::vector<std::string> args, const rc::test::child_process::env_map & env = {}) {
        std::vector<std::string> argv = {RC_RUSTYCAGE_BIN, "serve", "--threads", "1"};
        for (const char * port : {"--openai-port", "--ollama-port"}) {
            if (std::find(args.begin(), args.end(), port) == args.end()) argv.insert(argv.end(), {port, "0"});
        }
        argv.insert(argv.end(), args.begin(), args.end());
        rc::test::child_process p(argv, env);
        return p.finish(std::chrono::seconds(30));
    }
};

// Issue 10 item 14: three requests in one write are all answered, in order.
TEST_F(server_hardening, pipelined_requests_are_all_answered_in_order) {
    auto server = serve();
    ASSERT_TRUE(server->started());
    raw_conn c(server->openai_port());
    ASSERT_TRUE(c.ok());
    const std::string body = R"({"model":"demo","content":"hello"})";
    ASSERT_TRUE(c.send("GET /api/version HTTP/1.1\r\nHost: x\r\n\r\n"
                       "POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body +
                       "GET /v1/models/nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
    std::string in = c.read_until([](const std::string & s) { return count_of(s, "HTTP/1.1 ") >= 3 && s.find("model_not_found") != std::string::npos; }, 30s);
    ASSERT_EQ(count_of(in, "HTTP/1.1 "), 3u) << in;
    const size_t version = in.find("\"version\"");
    const size_t tokens = in.find("\"tokens\"");
    const size_t missing = in.find("HTTP/1.1 404");
    ASSERT_NE(version, std::string::npos) << in;
    ASSERT_NE(tokens, std::string::npos) << in;
    ASSERT_NE(missing, std::string::npos) << in;
    EXPECT_LT(version, tokens);
    EXPECT_LT(tokens, missing);
}

// Item 7: ~70 clients trickling header blocks must not keep real clients out, and lose their
// connections at the header deadline.
TEST_F(server_hardening, slowloris_clients_do_not_block_real_ones) {
    auto server = serve({"--header-timeout", "3"});
    ASSERT_TRUE(server->started());
    std::vector<std::unique_ptr<raw_conn>> slow;
    for (int i = 0; i < 70; ++i) {
        auto c = std::make_unique<raw_conn>(server->openai_port());
        ASSERT_TRUE(c->ok());
        ASSERT_TRUE(c->send(partial_header));
        slow.push_back(std::move(c));
    }
    const auto start = clock_type::now();
    httplib::Client client("127.0.0.1", server->openai_port());
    client.set_read_timeout(60);
    for (int i = 0; i < 20; ++i) {
        auto r = client.Get("/health");
        ASSERT_TRUE(r) << "request " << i;
        EXPECT_EQ(r->status, 200);
    }
    auto chat = client.Post("/v1/chat/completions", R"({"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":2})", "application/json");
    ASSERT_TRUE(chat);
    EXPECT_EQ(chat->status, 200) << chat->body;
    EXPECT_LT(clock_type::now() - start, 20s) << "real clients were served beside the slow ones";

    // Each slow client gets a 408 and loses its connection soon after its header deadline.
    for (auto & c : slow) {
        std::string in = c->read_until([](const std::string &) { return false; }, 15s);
        EXPECT_TRUE(c->closed()) << "connection still open after the header deadline";
        EXPECT_NE(in.find("HTTP/1.1 408"), std::string::npos) << in;
    }
    EXPECT_LT(clock_type::now() - start, 25s);
}

// Item 7: over the connection cap, a client is answered 503 with Retry-After at once.
TEST_F(server_hardening, connections_over_the_cap_get_503_and_retry_after) {
    auto server = serve({"--max-connections", "4", "--header-timeout", "20"});
    ASSERT_TRUE(server->started());
    auto held = hold_the_cap(server->openai_port(), 4);
    ASSERT_FALSE(HasFailure());
    raw_conn extra(server->openai_port());
    const auto t0 = clock_type::now();
    extra.send("GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n");
    std::string in = extra.read_until([](const std::string & s) { return s.find("}") != std::string::npos; }, 10s);
    EXPECT_NE(in.find("HTTP/1.1 503"), std::string::npos) << in;
    EXPECT_NE(in.find("Retry-After: 1"), std::string::npos) << in;
    EXPECT_NE(in.find("too many open connections"), std::string::npos) << in;
    EXPECT_LT(clock_type::now() - t0, 3s);
    held.clear();  // slots free again: served normally
    EXPECT_TRUE(rc::test::poll_until([&] {
        httplib::Client c("127.0.0.1", server->openai_port());
        auto r = c.Get("/health");
        return r && r->status == 200;
    }, 30s));
}

// Round three: 300 idle connections on a port capped at 64 left 220 closed unanswered, a fresh
// client too: the refusals waited a second each for a request line, on the 16 threads kept for
// them, and connections beyond those were dropped. Every connection over the cap hears a 503.
TEST_F(server_hardening, a_burst_of_idle_connections_over_the_cap_is_answered_503_every_one) {
    auto server = serve({"--max-connections", "4", "--header-timeout", "20"});
    ASSERT_TRUE(server->started());
    auto held = hold_the_cap(server->openai_port(), 4);
    ASSERT_FALSE(HasFailure());
    // 60 connections at once that send nothing (idle, as a crowd of stuck clients), then a fresh one.
    std::vector<std::unique_ptr<raw_conn>> burst;
    for (int i = 0; i < 60; ++i) burst.push_back(std::make_unique<raw_conn>(server->openai_port()));
    raw_conn fresh(server->openai_port());
    fresh.send("GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n");
    int answered = 0;
    for (auto & c : burst) {
        const std::string in = c->read_until([](const std::string & s) { return s.find("\r\n\r\n") != std::string::npos; }, 10s);
        answered += in.find("HTTP/1.1 503") != std::string::npos && in.find("Retry-After: 1") != std::string::npos ? 1 : 0;
    }
    EXPECT_EQ(answered, 60) << "every idle connection over the cap got its 503, none a bare close";
    const std::string in = fresh.read_until([](const std::string & s) { return s.find("}") != std::string::npos; }, 10s);
    EXPECT_NE(in.find("HTTP/1.1 503"), std::string::npos) << in;
    EXPECT_NE(in.find("too many open connections"), std::string::npos) << in;
}

// Item 8: a second server on a port in use fails at once, saying so (no SO_REUSEPORT sharing).
TEST_F(server_hardening, a_second_server_on_the_same_port_fails_fast) {
    auto first = serve();
    ASSERT_TRUE(first->started());
    const auto t0 = clock_type::now();
    auto r = serve_fails({"--openai-port", std::to_string(first->openai_port()), "--models-dir", first->dir().string() + "/models"});
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_NE(r.err.find("already in use"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("rustycage listening"), std::string::npos) << r.out;
    EXPECT_LT(clock_type::now() - t0, 20s);
}

// Item 9: an empty key (an unset variable) or a stray comma is refused at start; keys are trimmed.
TEST_F(server_hardening, empty_api_keys_are_refused_at_start) {
    auto r = serve_fails({"--api-key", ""});
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find("API key 1 of 1 is empty"), std::string::npos) << r.err;
    r = serve_fails({}, {{"RUSTYCAGE_API_KEYS", " , secret"}});
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find("is empty"), std::string::npos) << r.err;
    r = serve_fails({"--api-key", "two words"});
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_EQ(r.err.find("two words"), std::string::npos) << "a key is never printed: " << r.err;
}

TEST_F(server_hardening, api_keys_are_trimmed_and_a_request_without_one_is_refused) {
    const rc::test::temp_dir tmp("hardening-keys");
    const fs::path dir = tmp.path();
    fs::create_directories(dir / "models");
    fs::create_symlink(model_path("tiny-chat"), dir / "models/demo.gguf");
    rc::test::child_process p({RC_RUSTYCAGE_BIN, "serve", "--openai-port", "0", "--ollama-port", "-1", "--threads", "1", "--models-dir",
                               (dir / "models").string()},
                              {{"RUSTYCAGE_API_KEYS", " secret ,other "}});
    int port = 0;
    ASSERT_TRUE(p.read_until([&](const std::string & out, const std::string &) {
        auto at = out.find("openai=http://127.0.0.1:");
        if (at == std::string::npos) return false;
        port = std::stoi(out.substr(at + 24));
        return true;
    }, 60s));
    httplib::Client c("127.0.0.1", port);
    auto status = [](const httplib::Result & r) { return r ? r->status : -1; };
    EXPECT_EQ(status(c.Get("/v1/models")), 401);
    EXPECT_EQ(status(c.Get("/v1/models", httplib::Headers{{"Authorization", "Bearer"}})), 401);
    EXPECT_EQ(status(c.Get("/v1/models", httplib::Headers{{"Authorization", "Bearer secret"}})), 200);
    EXPECT_EQ(status(c.Get("/v1/models", httplib::Headers{{"Authorization", "bearer  other"}})), 200);
    EXPECT_EQ(status(c.Get("/v1/models", httplib::Headers{{"x-api-key", "secret"}})), 200);
    EXPECT_EQ(status(c.Get("/v1/models", httplib::Headers{{"Authorization", "Bearer secre"}})), 401);
    EXPECT_EQ(status(c.Get("/health")), 200) << "health stays public";

    // Refused before the body is read: the 401 comes while a 30 MB body has not been sent.
    raw_conn raw(port);
    raw.send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 31457280\r\n\r\n{\"model\":");
    std::string in = raw.read_until([](const std::string & s) { return s.find("\r\n\r\n") != std::string::npos; }, 10s);
    EXPECT_NE(in.find("HTTP/1.1 401"), std::string::npos) << in;
    EXPECT_NE(in.find("Connection: close"), std::string::npos) << in;
    p.send(SIGTERM);
    p.finish(std::chrono::seconds(30));
}

// Item 13: path flags are checked at start; a bad one stops the server with a clear message instead
// of a server that says it is ready and then fails every request.
TEST_F(server_hardening, bad_path_flags_fail_at_start) {
    const rc::test::temp_dir tmp("hardening-paths");
    const fs::path dir = tmp.path();
    std::ofstream(dir / "a-file") << "x";
    auto r = serve_fails({"--models-dir", (dir / "models").string(), "--kv-disk-dir", (dir / "a-file/kv").string()});
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find("--kv-disk-dir"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("a part of the path is a file"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("rustycage listening"), std::string::npos);

    r = serve_fails({"--models-dir", (dir / "a-file").string()});
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find("--models-dir"), std::string::npos) << r.err;

    r = serve_fails({"--models-dir", "/proc/rustycage-models"});
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find("cannot be created"), std::string::npos) << r.err;
}

}  // namespace
