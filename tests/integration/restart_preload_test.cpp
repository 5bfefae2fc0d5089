// Restarts (issue 34): `serve --preload` loads models before the server reports ready, and
// `--preload auto` finds the models the KV disk tier holds conversations for. The invariant a
// client relies on: the first time /v1/health/ready says 200, the models are loaded.
#include <cpp-httplib/httplib.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <chrono>
#include <fstream>

#include "support/server_process.h"
#include "support/temp_dir.h"
#include "test_models.h"

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

const auto k_model = std::vector<std::pair<std::string, std::string>>{{"demo", rc::test::model_path("tiny-chat")}};

// Polls readiness; every answer before the first 200 must be a 503 saying what it still loads.
// Returns the models /api/ps lists right after the first 200.
std::vector<std::string> loaded_when_first_ready(const rc::test::server_process & s, int * not_ready_answers) {
    httplib::Client c("127.0.0.1", s.openai_port());
    bool ready = false;
    EXPECT_TRUE(rc::test::poll_until([&] {
        auto r = c.Get("/v1/health/ready");
        if (!r) return false;
        if (r->status == 200) return ready = true;
        EXPECT_EQ(r->status, 503);
        EXPECT_NE(r->body.find("loading"), std::string::npos) << r->body;
        ++*not_ready_answers;
        return false;
    }));
    std::vector<std::string> names;
    if (!ready) return names;
    httplib::Client o("127.0.0.1", s.ollama_port());
    auto ps = o.Get("/api/ps");
    EXPECT_TRUE(ps && ps->status == 200);
    if (ps && ps->status == 200) {
        const json doc = json::parse(ps->body);
        for (const auto & m : doc["models"]) names.push_back(m["name"].get<std::string>());
    }
    return names;
}

bool lists(const std::vector<std::string> & names, const std::string & model) {
    for (const auto & n : names)
        if (n == model || n == model + ":latest") return true;
    return false;
}

}  // namespace

TEST(restart_preload, a_named_preload_is_loaded_before_the_server_reports_ready) {
    rc::test::server_process s(k_model, {"--preload", "demo"});
    ASSERT_TRUE(s.started());
    int not_ready = 0;
    EXPECT_TRUE(lists(loaded_when_first_ready(s, &not_ready), "demo"));
}

TEST(restart_preload, a_preload_of_a_model_that_is_not_there_stops_the_server_before_it_listens) {
    rc::test::server_process s(k_model, {"--preload", "no-such-model"});
    EXPECT_FALSE(s.started());
    EXPECT_EQ(s.stop(), 2);
}

TEST(restart_preload, preload_auto_loads_what_the_disk_tier_holds_conversations_for) {
    const rc::test::temp_dir tmp("kv-preload");  // the disk tier both servers share, removed after the test
    const fs::path kv_dir = tmp.path();
    const std::vector<std::string> args = {"--kv-disk-dir", kv_dir.string(), "--kv-disk-budget", "64MiB", "--preload", "auto"};
    {
        // Nothing used yet: `auto` has nothing to load and the server is ready at once.
        rc::test::server_process s(k_model, args);
        ASSERT_TRUE(s.started());
        int not_ready = 0;
        EXPECT_TRUE(loaded_when_first_ready(s, &not_ready).empty());
        httplib::Client c("127.0.0.1", s.openai_port());
        c.set_read_timeout(120);
        auto r = c.Post("/v1/completions", json{{"model", "demo"}, {"prompt", "Remember me"}, {"max_tokens", 4}}.dump(), "application/json");
        ASSERT_TRUE(r && r->status == 200);
    }
    std::ifstream in(kv_dir / "recent-models.json");
    ASSERT_TRUE(in) << "the use of demo was noted beside the disk tier";
    const auto recent = json::parse(in, nullptr, false);
    ASSERT_TRUE(recent.is_object());
    EXPECT_EQ(recent["models"][0]["name"], "demo");
    {
        rc::test::server_process s(k_model, args);
        ASSERT_TRUE(s.started());
        int not_ready = 0;
        EXPECT_TRUE(lists(loaded_when_first_ready(s, &not_ready), "demo")) << "loaded before ready, without a request";
    }
    {
        // Without the tier `auto` finds nothing: the server starts as it would without the flag.
        rc::test::server_process s(k_model, {"--preload", "auto"});
        ASSERT_TRUE(s.started());
        int not_ready = 0;
        EXPECT_TRUE(loaded_when_first_ready(s, &not_ready).empty());
    }
}

// Round three: the server trusted the state files it wrote itself. `used` as a string aborted the
// process at start under `--preload auto` (json type_error) and failed a load without it; a FIFO in
// place of recent-models.json or .state/step-cost.json hung the start or the first load. Each is now
// read as a bounded regular file, field by field: a bad one is logged and ignored, never fatal.
TEST(restart_preload, damaged_state_files_are_ignored_never_fatal) {
    const rc::test::temp_dir tmp("kv-damaged");
    const fs::path kv_dir = tmp.path();
    const fs::path recent = kv_dir / "recent-models.json";
    const std::vector<std::string> args = {"--kv-disk-dir", kv_dir.string(), "--kv-disk-budget", "64MiB", "--preload", "auto"};
    auto chat_ok = [](const rc::test::server_process & s) {
        httplib::Client c("127.0.0.1", s.openai_port());
        c.set_read_timeout(60);
        auto r = c.Post("/v1/chat/completions", json{{"model", "demo"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 2}}.dump(),
                        "application/json");
        return r && r->status == 200;
    };
    std::ofstream(recent) << R"({"schema": 1, "models": [{"name": "demo", "used": "yesterday"}, {"name": "demo", "used": null}, {"name": 42}, "x"]})";
    {
        rc::test::server_process s(k_model, args);
        ASSERT_TRUE(s.started()) << "a `used` that is not a number is no reason to stop";
        int not_ready = 0;
        EXPECT_TRUE(lists(loaded_when_first_ready(s, &not_ready), "demo")) << "its one well-formed name is still preloaded";
        EXPECT_TRUE(chat_ok(s));
        // Unloaded and loaded again: the load notes its use in the same file.
        httplib::Client o("127.0.0.1", s.ollama_port());
        auto unload = o.Post("/api/generate", json{{"model", "demo"}, {"keep_alive", 0}}.dump(), "application/json");
        ASSERT_TRUE(unload && unload->status == 200);
        EXPECT_TRUE(chat_ok(s)) << "reloaded after the unload";
    }
    const auto rewritten = json::parse(std::ifstream(recent), nullptr, false);
    ASSERT_TRUE(rewritten.is_object());
    EXPECT_EQ(rewritten["models"][0]["name"], "demo");
    EXPECT_TRUE(rewritten["models"][0]["used"].is_number_integer()) << rewritten.dump();

    fs::remove(recent);
    ASSERT_EQ(::mkfifo(recent.c_str(), 0600), 0);
    {
        const auto t0 = std::chrono::steady_clock::now();
        rc::test::server_process s(k_model, args);
        ASSERT_TRUE(s.started()) << "a FIFO in place of recent-models.json does not hold the start";
        int not_ready = 0;
        EXPECT_TRUE(loaded_when_first_ready(s, &not_ready).empty());
        // The step cost file is read at the model's load: a FIFO there must not hold the first chat.
        fs::create_directories(s.dir() / "models" / ".state");
        ASSERT_EQ(::mkfifo((s.dir() / "models" / ".state" / "step-cost.json").c_str(), 0600), 0);
        EXPECT_TRUE(chat_ok(s)) << "a FIFO in place of step-cost.json does not hold the load";
        EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(50));
    }
    EXPECT_TRUE(fs::is_regular_file(recent)) << "the load's note replaced the FIFO with the file it should have been";
}
