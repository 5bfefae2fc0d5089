// Pulls that finish unattended (issue 34), end to end: the real `rustycage pull` and a real server's
// POST /api/pull against the fake Hub (tests/fixtures/fake_hub) made to refuse, cut and stall file
// downloads. The retry logic itself is tested in tests/hub/hub_retry_test.cpp; here: that the command
// and the API ride it out, show each retry, and say clearly when the attempts run out.
#include <cpp-httplib/httplib.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "child_process.h"
#include "hub/fake_hub.h"
#include "support/poll.h"
#include "support/raw_conn.h"
#include "support/server_process.h"
#include "support/temp_dir.h"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using rc::test::child_process;
using rc::test::cli_result;
using rc::test::fake_hub;
using steady = std::chrono::steady_clock;
using rc::test::raw_conn;
using namespace std::chrono_literals;

const std::string k_repo = "owner/tiny-GGUF";
const std::string k_name = "hf.co/owner/tiny-GGUF:Q8_0";
constexpr uint64_t k_mib = 1 << 20;

std::string model_file(const std::string & preset) { return std::string(RC_TEST_MODELS_DIR) + "/" + preset + ".gguf"; }
bool contains(const std::string & text, const std::string & part) { return text.find(part) != std::string::npos; }
size_t count_of(const std::string & text, const std::string & part) {
    size_t n = 0;
    for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++n;
    return n;
}

class pull_retry : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!fake_hub::node_available()) GTEST_SKIP() << "node not found: the fake Hub cannot run";
        tmp_ = std::make_unique<rc::test::temp_dir>("pull-retry");
        root_ = tmp_->path();
        models_ = root_ / "models";
        const fs::path repo = root_ / "hub" / k_repo;
        fs::create_directories(repo);
        fs::create_symlink(model_file("tiny-chat-q8"), repo / "tiny-chat-Q8_0.gguf");
        fs::create_symlink(model_file("tiny-chat"), repo / "tiny-chat-F16.gguf");
        hub_ = std::make_unique<fake_hub>(root_ / "hub");
        ASSERT_TRUE(hub_->started()) << "the fake Hub did not start";
    }
    void TearDown() override {
        hub_.reset();  // before its files go
        tmp_.reset();
    }

    // `rustycage pull k_name ARGS... --models-dir <models>`, with `env` on top of HF_ENDPOINT.
    cli_result pull(std::vector<std::string> args, child_process::env_map env = {}) {
        args.insert(args.begin(), {std::string(RC_RUSTYCAGE_BIN), "pull", k_name});
        args.insert(args.end(), {"--models-dir", models_.string()});
        env["HF_ENDPOINT"] = hub_->endpoint();
        return child_process(args, env).finish(std::chrono::seconds(240));
    }

    std::string model_status() {
        auto r = child_process({RC_RUSTYCAGE_BIN, "list", "--json", "--models-dir", models_.string()}, {}).finish();
        auto list = json::parse(r.out, nullptr, false);
        if (!list.is_array()) return "(list failed: " + r.err + ")";
        for (const auto & e : list)
            if (e.value("name", "") == k_name) return e.value("status", "");
        return "(absent)";
    }
    // The partial downloads the store keeps under <models>/partial.
    std::vector<uint64_t> partial_sizes() const {
        std::vector<uint64_t> out;
        std::error_code ec;
        for (fs::directory_iterator it(models_ / "partial", ec), end; !ec && it != end; it.increment(ec)) out.push_back(it->file_size());
        return out;
    }
    std::vector<std::string> file_ranges() {
        std::vector<std::string> out;
        const json stats = hub_->stats();  // kept: a range-for over a temporary's member would dangle
        for (const auto & r : stats["requests"])
            if (contains(r.value("path", ""), "tiny-chat-Q8_0.gguf")) out.push_back(r["range"].is_string() ? r["range"].get<std::string>() : "-");
        return out;
    }

    std::unique_ptr<rc::test::temp_dir> tmp_;  // made after the skip check: none for a skipped test
    fs::path root_, models_;
    std::unique_ptr<fake_hub> hub_;
};

TEST_F(pull_retry, a_429_three_drops_and_a_stall_are_ridden_out_and_shown) {
    // File request 1: 429 with Retry-After 1; bodies 2-4: cut after 4 MiB each; body 5: stops after
    // 4 MiB with the connection held open for far longer than the stall limit; body 6: the rest.
    hub_->control({{"failStatus", 429}, {"retryAfter", "1"}, {"failAfterBytes", 4 * k_mib}, {"failTimes", 3},
                   {"stallAfterBytes", 4 * k_mib}, {"stallSeconds", 120}});
    const auto start = steady::now();
    auto r = pull({"--retry-delay", "50ms", "--stall-timeout", "1s"});
    const auto took = steady::now() - start;
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(contains(r.out, "pulled " + k_name + " (Q8_0, ")) << r.out;
    EXPECT_EQ(model_status(), "ready");

    // Every retry has its own line: attempt, wait, reason.
    EXPECT_TRUE(contains(r.err, "retrying (2/8) in 1.0s: HTTP 429, Retry-After 1\n")) << r.err;
    EXPECT_EQ(count_of(r.err, ": connection closed early: "), 3u) << r.err;
    EXPECT_EQ(count_of(r.err, ": stalled: no data for 1 s\n"), 1u) << r.err;
    EXPECT_EQ(count_of(r.err, "retrying (2/8) in "), 5u) << r.err;
    EXPECT_TRUE(contains(r.err, "verifying sha256 digest")) << r.err;
    EXPECT_GE(took, std::chrono::seconds(2)) << "the Retry-After second and the stall second";
    EXPECT_LT(took, std::chrono::seconds(100)) << "not the server's 120 s pause";

    const uint64_t size = fs::file_size(model_file("tiny-chat-q8"));
    EXPECT_EQ(hub_->stats()["bytesServed"].get<uint64_t>(), size) << "every byte crossed the wire once";
    EXPECT_EQ(file_ranges(), (std::vector<std::string>{"-", "-", "bytes=4194304-", "bytes=8388608-", "bytes=12582912-", "bytes=16777216-"}));
    EXPECT_TRUE(partial_sizes().empty());
}

TEST_F(pull_retry, attempts_that_run_out_keep_the_partial_for_the_next_pull) {
    // A first pull that does not retry (RUSTYCAGE_PULL_RETRIES=0) leaves 4 MiB; then the Hub is down.
    hub_->control({{"failAfterBytes", 4 * k_mib}});
    auto first = pull({}, {{"RUSTYCAGE_PULL_RETRIES", "0"}});
    ASSERT_EQ(first.code, 1) << first.err;
    EXPECT_FALSE(contains(first.err, "retrying")) << first.err;
    EXPECT_EQ(partial_sizes(), std::vector<uint64_t>{4 * k_mib});

    hub_->control({{"failStatus", 503}, {"failStatusTimes", 1000}});
    auto r = pull({"--retries", "2"}, {{"RUSTYCAGE_PULL_RETRY_DELAY", "20ms"}});
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_TRUE(contains(r.err, "retrying (2/3) in ")) << r.err;
    EXPECT_TRUE(contains(r.err, "retrying (3/3) in ")) << r.err;
    EXPECT_TRUE(contains(r.err, "failed after 3 attempts")) << r.err;
    EXPECT_TRUE(contains(r.err, "HTTP 503")) << r.err;
    EXPECT_TRUE(contains(r.err, "(4194304 of ")) << r.err;
    EXPECT_TRUE(contains(r.err, "is kept: run the same pull again to resume")) << r.err;
    EXPECT_EQ(count_of(r.err, "resume"), 1u) << "one hint, not two: " << r.err;
    EXPECT_EQ(partial_sizes(), std::vector<uint64_t>{4 * k_mib});
    EXPECT_EQ(model_status(), "(absent)");

    hub_->control({{"reset", true}});
    hub_->reset_stats();
    auto again = pull({});
    ASSERT_EQ(again.code, 0) << again.err;
    EXPECT_EQ(model_status(), "ready");
    EXPECT_EQ(file_ranges(), std::vector<std::string>{"bytes=4194304-"});
}

TEST_F(pull_retry, a_404_for_the_file_is_not_retried) {
    hub_->control({{"failStatus", 404}, {"failStatusTimes", 10}});
    auto r = pull({"--retry-delay", "10ms"});
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_TRUE(contains(r.err, "not found")) << r.err;
    EXPECT_FALSE(contains(r.err, "retrying")) << r.err;
    EXPECT_EQ(file_ranges().size(), 1u);
}

TEST_F(pull_retry, bad_retry_settings_are_refused_before_any_request) {
    for (const auto & [args, env, says] : std::vector<std::tuple<std::vector<std::string>, child_process::env_map, std::string>>{
             {{"--retries", "lots"}, {}, "--retries must be a whole number"},
             {{"--stall-timeout", "10ms"}, {}, "--stall-timeout must be 0 (off) or a duration from 1s"},
             {{}, {{"RUSTYCAGE_PULL_RETRY_DELAY", "forever"}}, "RUSTYCAGE_PULL_RETRY_DELAY must be a duration"}}) {
        auto r = pull(args, env);
        EXPECT_EQ(r.code, 1) << r.err;
        EXPECT_TRUE(contains(r.err, says)) << r.err;
    }
    EXPECT_TRUE(hub_->stats()["requests"].empty());
}

// The NDJSON lines of an /api/pull stream.
std::vector<json> ndjson_lines(const std::string & body) {
    std::vector<json> out;
    std::istringstream in(body);
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) out.push_back(json::parse(line, nullptr, false));
    return out;
}

TEST_F(pull_retry, api_pull_streams_retrying_lines_and_reports_attempts_that_run_out) {
    // The server reads HF_ENDPOINT and RUSTYCAGE_PULL_* from its environment, inherited at spawn.
    setenv("HF_ENDPOINT", hub_->endpoint().c_str(), 1);
    setenv("RUSTYCAGE_PULL_RETRIES", "2", 1);
    setenv("RUSTYCAGE_PULL_RETRY_DELAY", "20ms", 1);
    rc::test::server_process server({{"demo", model_file("tiny-chat")}});
    for (const char * v : {"HF_ENDPOINT", "RUSTYCAGE_PULL_RETRIES", "RUSTYCAGE_PULL_RETRY_DELAY"}) unsetenv(v);
    ASSERT_TRUE(server.started());
    httplib::Client c("127.0.0.1", server.ollama_port());
    c.set_read_timeout(240);

    hub_->control({{"failStatus", 503}, {"retryAfter", "1"}, {"failAfterBytes", 4 * k_mib}, {"failTimes", 2}});
    auto r = c.Post("/api/pull", json{{"model", k_name}}.dump(), "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    auto lines = ndjson_lines(r->body);
    std::vector<json> retries;
    for (const auto & l : lines) {
        ASSERT_FALSE(l.is_discarded()) << r->body;
        if (l.value("status", "") == "retrying") retries.push_back(l);
    }
    ASSERT_EQ(retries.size(), 3u) << r->body;
    EXPECT_EQ(retries[0]["reason"], "HTTP 503, Retry-After 1");
    EXPECT_EQ(retries[0]["retry_in_ms"], 1000);
    for (const auto & l : retries) {
        EXPECT_EQ(l["attempt"], 2) << l.dump();
        EXPECT_EQ(l["max_attempts"], 3) << l.dump();
        EXPECT_TRUE(l["digest"].get<std::string>().starts_with("sha256:")) << l.dump();
        EXPECT_FALSE(l.contains("error")) << "Ollama's clients end a pull at any line with an error: " << l.dump();
    }
    EXPECT_TRUE(contains(retries[1]["reason"].get<std::string>(), "connection closed early")) << retries[1].dump();
    EXPECT_EQ(lines.back(), json({{"status", "success"}}));

    // A Hub that stays down (for another quantization: this one is in the store now): the stream
    // ends with an error that says how many attempts were made.
    hub_->control({{"failStatus", 503}, {"failStatusTimes", 1000}});
    auto down = c.Post("/api/pull", json{{"model", "hf.co/owner/tiny-GGUF:F16"}}.dump(), "application/json");
    ASSERT_TRUE(down);
    auto down_lines = ndjson_lines(down->body);
    ASSERT_FALSE(down_lines.empty());
    size_t down_retries = 0;
    for (const auto & l : down_lines) down_retries += l.value("status", "") == "retrying";
    EXPECT_EQ(down_retries, 2u) << down->body;
    const std::string error = down_lines.back().value("error", "");
    EXPECT_TRUE(contains(error, "failed after 3 attempts")) << down->body;
    EXPECT_TRUE(contains(error, "HTTP 503")) << down->body;
}


// Round three: a non-streamed /api/pull whose client left kept pulling, against a Hub trickling a
// byte a second for ever, and kept its claim (every later pull of the model: 409). Its connection is
// watched now: the pull is cancelled and the claim released soon after the client goes.
TEST_F(pull_retry, a_non_streamed_pull_whose_client_left_is_cancelled) {
    setenv("HF_ENDPOINT", hub_->endpoint().c_str(), 1);
    rc::test::server_process server({{"demo", model_file("tiny-chat")}});
    unsetenv("HF_ENDPOINT");
    ASSERT_TRUE(server.started());
    hub_->control({{"throttle", 2000}});
    {
        raw_conn c(server.ollama_port());
        const std::string body = json{{"model", k_name}, {"stream", false}}.dump();
        ASSERT_TRUE(c.send("POST /api/pull HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                           "\r\n\r\n" + body));
        ASSERT_TRUE(rc::test::poll_until([&] { return hub_->stats().value("bytesServed", 0) > 0; }, 30s)) << "the file began to arrive";
    }  // the client goes
    // The claim tells whether that pull still runs: a streamed pull of the same model answers 409 at
    // once while it does (and starts, to be dropped with its connection, once it does not).
    auto claimed = [&] {
        raw_conn probe(server.ollama_port());
        const std::string body = json{{"model", k_name}}.dump();
        probe.send("POST /api/pull HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
                   body);
        return probe.read_until([](const std::string & in) { return in.find("\r\n") != std::string::npos; }, 10s).find(" 409 ") != std::string::npos;
    };
    EXPECT_TRUE(rc::test::poll_until([&] {
        return !claimed();
    }, 20s)) << "the first pull still holds its claim: it was never cancelled";
}

}  // namespace
