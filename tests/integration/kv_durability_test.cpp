// The disk tier under a crash: kill -9 while blocks are being written back, corrupt some of what
// was written, restart on the same directory. No corrupted block may be served (output equals the
// pre-crash output), corrupt blocks are dropped and counted, budgets hold, the server serves.
// Q8_0 model with an F32 KV cache, where restored KV gives bit-identical greedy output.
#include <cpp-httplib/httplib.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <regex>
#include <thread>

#include "support/exact_kernels.h"
#include "support/server_process.h"
#include "support/temp_dir.h"
#include "test_models.h"

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> prompts() {
    std::vector<std::string> p;
    for (int i = 0; i < 8; ++i) {
        std::string s = "Document " + std::to_string(i) + ":";
        for (int w = 0; w < 40; ++w) s += " word" + std::to_string(i * 50 + w);
        p.push_back(s);
    }
    return p;
}

std::string complete(int port, const std::string & prompt) {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(120);
    json body = {{"model", "demo"}, {"prompt", prompt}, {"max_tokens", 8}, {"temperature", 0}};
    auto res = c.Post("/v1/completions", body.dump(), "application/json");
    if (!res || res->status != 200) return "<error>";
    return json::parse(res->body)["choices"][0]["text"];
}

// The value of one series of /metrics; `labels` is a regex of the label set; -1 when absent.
double metric(int port, const std::string & name, const std::string & labels = R"(model="demo")") {
    httplib::Client c("127.0.0.1", port);
    auto res = c.Get("/metrics");
    if (!res) return -1;
    std::smatch m;
    std::regex re(name + R"(\{)" + labels + R"(\} ([0-9.e+]+))");
    return std::regex_search(res->body, m, re) ? std::stod(m[1]) : -1;
}

}  // namespace

TEST(kv_durability, kill_9_during_write_back_then_corruption_is_never_served) {
    const rc::test::temp_dir tmp("kv-durability");  // declared before the servers, so removed after they stop
    const fs::path kv_dir = tmp.path();
    const std::vector<std::string> args = {"--kv-disk-dir", kv_dir.string(), "--kv-disk-budget", "64MiB", "--kv-host-budget", "0",
                                           "--kv-cached-sequences", "0", "--kv-block-size", "16", "--kv-type", "f32"};
    const auto model = std::vector<std::pair<std::string, std::string>>{{"demo", rc::test::model_path("tiny-chat-q8")}};
    std::vector<std::string> expected;
    {
        rc::test::server_process s(model, args);
        ASSERT_TRUE(s.started());
        for (const auto & p : prompts()) expected.push_back(complete(s.openai_port(), p));
        // Heavy write-back from several clients, then the process dies mid-flight.
        std::vector<std::thread> load;
        std::atomic<bool> stop{false};
        for (int t = 0; t < 3; ++t) {
            load.emplace_back([&, t] {
                for (int i = 0; !stop; ++i) complete(s.openai_port(), "Load " + std::to_string(t) + " " + std::to_string(i) + prompts()[i % 8]);
            });
        }
        auto files = [&] {
            std::error_code ec;  // files come and go
            size_t n = 0;
            for (fs::directory_iterator it(kv_dir, ec), end; !ec && it != end; it.increment(ec)) ++n;
            return n;
        };
        ASSERT_TRUE(rc::test::poll_until([&] { return files() > 40; }));
        s.stop(SIGKILL);
        stop = true;
        for (auto & t : load) t.join();
    }
    for (const auto & e : expected) ASSERT_NE(e, "<error>");

    // Corrupt a few stored blocks (payload and header) and leave a half-written temp file.
    int flipped = 0;
    for (const auto & f : fs::directory_iterator(kv_dir)) {
        if (f.path().extension() != ".kvb" || flipped >= 6) continue;
        std::fstream io(f.path(), std::ios::in | std::ios::out | std::ios::binary);
        const std::streamoff at = flipped % 2 ? 50 : 400;
        io.seekg(at);
        char c;
        io.get(c);
        io.seekp(at);
        io.put(static_cast<char>(c ^ 0x40));
        ++flipped;
    }
    ASSERT_GT(flipped, 0);
    std::ofstream(kv_dir / "deadbeef.123.tmp") << "torn write";

    rc::test::server_process s(model, args);
    ASSERT_TRUE(s.started());
    auto p = prompts();
    for (size_t i = 0; i < p.size(); ++i) {
        const std::string got = complete(s.openai_port(), p[i]);
        EXPECT_NE(got, "<error>") << "prompt " << i << " after restart";
        EXPECT_SAME_OUTPUT(got, expected[i]) << "prompt " << i << " after restart";
    }
    EXPECT_GE(metric(s.openai_port(), "rustycage_kv_corrupt_blocks_total"), 1.0) << "corrupt blocks are counted";
    // The intact blocks were served from disk (and timed), the corrupt ones recomputed.
    EXPECT_GT(metric(s.openai_port(), "rustycage_kv_prompt_tokens_total", R"(model="demo",source="disk")"), 0);
    EXPECT_GT(metric(s.openai_port(), "rustycage_kv_promotion_seconds_count", R"(model="demo",source="disk")"), 0);
    EXPECT_FALSE(fs::exists(kv_dir / "deadbeef.123.tmp"));
    size_t bytes = 0;
    std::error_code ec;
    for (fs::directory_iterator it(kv_dir, ec), end; !ec && it != end; it.increment(ec)) {
        if (it->path().extension() == ".kvb") bytes += fs::file_size(it->path(), ec);
    }
    EXPECT_LE(bytes, 64u << 20);
    const std::string once = complete(s.openai_port(), "and it still serves");
    EXPECT_NE(once, "<error>");
    EXPECT_SAME_OUTPUT(complete(s.openai_port(), "and it still serves"), once);
}

TEST(kv_prefetch, a_prefetched_conversation_resumes_from_host_ram_after_a_restart) {
    const rc::test::temp_dir tmp("kv-prefetch");  // declared before the servers, so removed after they stop
    const fs::path kv_dir = tmp.path();
    const std::vector<std::string> args = {"--kv-disk-dir", kv_dir.string(), "--kv-disk-budget", "64MiB", "--kv-host-budget", "64MiB",
                                           "--kv-cached-sequences", "0", "--kv-block-size", "16", "--kv-type", "f32"};
    const auto model = std::vector<std::pair<std::string, std::string>>{{"demo", rc::test::model_path("tiny-chat-q8")}};
    const std::string conversation = prompts()[3];
    std::string before;
    {
        rc::test::server_process s(model, args);
        ASSERT_TRUE(s.started());
        before = complete(s.openai_port(), conversation + " and then");
        ASSERT_NE(before, "<error>");
        ASSERT_TRUE(rc::test::poll_until([&] { return metric(s.openai_port(), "rustycage_kv_tier_blocks", R"(model="demo",tier="disk")") >= 4; }));
    }
    rc::test::server_process s(model, args);
    ASSERT_TRUE(s.started());
    httplib::Client c("127.0.0.1", s.openai_port());
    auto bad = c.Post("/v1/kv/prefetch", R"({"model":"demo"})", "application/json");
    ASSERT_TRUE(bad);
    EXPECT_EQ(bad->status, 400);
    // The prompt about to be resent (a regenerate reuses all of it but its last token, so the block
    // holding its end is needed too: the prompt-end alias, which survived the restart, names it).
    auto res = c.Post("/v1/kv/prefetch", json{{"model", "demo"}, {"prompt", conversation + " and then"}}.dump(), "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 202) << res->body;
    // Done when a lookup of that prompt finds nothing left on disk only (the read is asynchronous).
    auto on_disk_only = [&] {
        auto r = c.Post("/v1/kv/lookup", json{{"model", "demo"}, {"prompt", conversation + " and then"}}.dump(), "application/json");
        if (!r || r->status != 200) return -1;
        const json j = json::parse(r->body, nullptr, false);
        return j.is_object() && j["tiers"]["host"].get<int>() > 0 ? j["tiers"]["disk"].get<int>() : -1;
    };
    ASSERT_TRUE(rc::test::poll_until([&] { return on_disk_only() == 0; })) << "the prefetch read the prompt's blocks into host RAM";
    const std::string moved = R"(model="demo",from="disk",to="host")";
    EXPECT_GE(metric(s.openai_port(), "rustycage_kv_block_moves_total", moved), 4) << "before any request asked for them";
    // The request then finds them in host RAM: nothing waits for the disk.
    EXPECT_EQ(complete(s.openai_port(), conversation + " and then"), before);
    EXPECT_GT(metric(s.openai_port(), "rustycage_kv_prompt_tokens_total", R"(model="demo",source="host")"), 0);
    EXPECT_EQ(metric(s.openai_port(), "rustycage_kv_prompt_tokens_total", R"(model="demo",source="disk")"), 0);
}

// The KV-pressure issue's second reproduction over HTTP: four long generations at once on a pool
// that holds about two (default tier flags). Before, two of them got HTTP 400; now the youngest are
// swapped out and resumed, every request succeeds, and /metrics counts the preemptions.
TEST(kv_pressure_http, four_long_generations_on_a_pool_that_holds_two_all_succeed) {
    const std::vector<std::string> args = {"--parallel", "4", "--ctx-size", "480", "--kv-type", "f32"};
    const auto model = std::vector<std::pair<std::string, std::string>>{{"demo", rc::test::model_path("tiny-chat-q8")}};
    rc::test::server_process s(model, args);
    ASSERT_TRUE(s.started());
    std::vector<int> status(4, 0);
    std::vector<int> completion(4, 0);
    std::vector<std::thread> clients;
    for (int i = 0; i < 4; ++i) {
        clients.emplace_back([&, i] {
            httplib::Client c("127.0.0.1", s.openai_port());
            c.set_read_timeout(300);
            json body = {{"model", "demo"}, {"prompt", prompts()[static_cast<size_t>(i)]}, {"max_tokens", 120}, {"temperature", 0}};
            auto res = c.Post("/v1/completions", body.dump(), "application/json");
            if (!res) return;
            status[static_cast<size_t>(i)] = res->status;
            if (res->status == 200) completion[static_cast<size_t>(i)] = json::parse(res->body)["usage"]["completion_tokens"];
        });
    }
    for (auto & t : clients) t.join();
    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(status[static_cast<size_t>(i)], 200) << "request " << i;
        EXPECT_GT(completion[static_cast<size_t>(i)], 0) << "request " << i;
    }
    EXPECT_GT(metric(s.openai_port(), "rustycage_kv_preemptions_total"), 0) << "someone had to give way";
    EXPECT_GT(metric(s.openai_port(), "rustycage_engine_prefill_chunks_total"), 0);
}
