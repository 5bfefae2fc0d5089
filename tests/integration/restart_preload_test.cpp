// Restarts (issue 34): `serve --preload` loads models before the server reports ready, and
// `--preload auto` finds the models the KV disk tier holds conversations for. The invariant a
// client relies on: the first time /v1/health/ready says 200, the models are loaded.
#include <cpp-httplib/httplib.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

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
