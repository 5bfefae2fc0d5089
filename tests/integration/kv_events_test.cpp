// GET /v1/kv/events on a real server (api/kv_events_route.h): the snapshot lists what the tiers
// hold (as many blocks as /metrics counts), a live stream carries the blocks a request stores, a
// resume from the last sequence number sends no snapshot, a restart changes the epoch (a reader
// then starts over) and bad query values are refused.
#include <cpp-httplib/httplib.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "support/server_process.h"
#include "support/temp_dir.h"
#include "test_models.h"

using json = nlohmann::json;

namespace {

std::string document(int i) {
    std::string s = "Document " + std::to_string(i) + ":";
    for (int w = 0; w < 60; ++w) s += " word" + std::to_string(i * 100 + w);
    return s;
}

bool complete(int port, const std::string & prompt) {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(120);
    json body = {{"model", "demo"}, {"prompt", prompt}, {"max_tokens", 4}, {"temperature", 0}};
    auto res = c.Post("/v1/completions", body.dump(), "application/json");
    return res && res->status == 200;
}

double metric(int port, const std::string & series) {
    httplib::Client c("127.0.0.1", port);
    auto res = c.Get("/metrics");
    if (!res) return -1;
    std::smatch m;
    std::regex re(series + R"( ([0-9.e+]+))");
    return std::regex_search(res->body, m, re) ? std::stod(m[1]) : -1;
}

// An SSE reader on its own thread: every event (name, data) as it arrives, until stopped or the
// stream ends.
class event_reader {
  public:
    event_reader(int port, std::string path) {
        thread_ = std::thread([this, port, path] {
            httplib::Client c("127.0.0.1", port);
            c.set_read_timeout(60);
            std::string pending;
            auto res = c.Get(path, [&](const char * data, size_t n) {
                pending.append(data, n);
                for (size_t end; (end = pending.find("\n\n")) != std::string::npos;) {
                    const std::string block = pending.substr(0, end);
                    pending.erase(0, end + 2);
                    std::string name, payload;
                    std::istringstream lines(block);
                    for (std::string line; std::getline(lines, line);) {
                        if (line.rfind("event: ", 0) == 0) name = line.substr(7);
                        if (line.rfind("data: ", 0) == 0) payload = line.substr(6);
                    }
                    std::lock_guard lock(mu_);
                    events_.emplace_back(name, json::parse(payload, nullptr, false));
                }
                return !stop_;
            });
            std::lock_guard lock(mu_);
            status_ = res ? res->status : -1;
            ended_ = true;
        });
    }
    ~event_reader() {
        stop_ = true;
        thread_.join();
    }
    std::vector<std::pair<std::string, json>> events() const {
        std::lock_guard lock(mu_);
        return events_;
    }
    bool ended() const {
        std::lock_guard lock(mu_);
        return ended_;
    }
    int status() const {
        std::lock_guard lock(mu_);
        return status_;
    }

  private:
    mutable std::mutex mu_;
    std::vector<std::pair<std::string, json>> events_;
    bool ended_ = false;
    int status_ = 0;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

// A tier as a reader of the stream knows it: the snapshot's keys, then each change applied.
std::set<std::string> tier_seen(const std::vector<std::pair<std::string, json>> & events, const std::string & tier) {
    std::set<std::string> held;
    for (const auto & [name, data] : events) {
        if (name == "snapshot") {
            held.clear();
            for (const auto & src : data["sources"])
                for (const auto & k : src["blocks"].value(tier, json::array())) held.insert(k.get<std::string>());
        }
        if (name != "kv") continue;
        for (const auto & c : data["changes"]) {
            if (c.value("tier", "") != tier) continue;
            for (const auto & k : c["keys"]) {
                if (c["op"] == "added") held.insert(k.get<std::string>());
                if (c["op"] == "removed") held.erase(k.get<std::string>());
            }
        }
    }
    return held;
}

std::set<std::string> host_tier_seen(const std::vector<std::pair<std::string, json>> & events) { return tier_seen(events, "host"); }

const std::vector<std::string> tier_args = {"--kv-host-budget", "64MiB", "--kv-cached-sequences", "0", "--kv-block-size", "16"};

TEST(kv_events, the_snapshot_matches_the_tiers_and_the_stream_carries_each_stored_block) {
    const auto model = std::vector<std::pair<std::string, std::string>>{{"demo", rc::test::model_path("tiny-chat")}};
    rc::test::server_process s(model, tier_args);
    ASSERT_TRUE(s.started());
    const int port = s.openai_port();
    ASSERT_TRUE(complete(port, document(0)));
    const std::string host_series = R"(rustycage_kv_tier_blocks\{model="demo",tier="host"\})";
    ASSERT_TRUE(rc::test::poll_until([&] { return metric(port, host_series) > 0; }));

    event_reader live(port, "/v1/kv/events");
    ASSERT_TRUE(rc::test::poll_until([&] { return !live.events().empty(); }));
    const auto [first_name, snapshot] = live.events().front();
    ASSERT_EQ(first_name, "snapshot");
    ASSERT_EQ(snapshot["sources"].size(), 1u) << snapshot.dump();
    const json & source = snapshot["sources"][0];
    EXPECT_EQ(source["model"], "demo");
    EXPECT_EQ(source["block_size"], 16);
    EXPECT_EQ(source["identity"].get<std::string>().size(), 64u);
    EXPECT_FALSE(source["blocks"]["host"].empty());
    for (const auto & k : source["blocks"]["host"]) EXPECT_TRUE(std::regex_match(k.get<std::string>(), std::regex("[0-9a-f]{16}")));
    // The snapshot and the changes after it are the tier (the request's last blocks may still be
    // going in when the snapshot is taken: they come as changes).
    auto seen_is_tier = [&] { return static_cast<double>(host_tier_seen(live.events()).size()) == metric(port, host_series); };
    ASSERT_TRUE(rc::test::poll_until(seen_is_tier)) << "the stream's picture is what /metrics counts";

    // A new document stores new blocks: they arrive on the open stream.
    const size_t before = host_tier_seen(live.events()).size();
    ASSERT_TRUE(complete(port, document(1)));
    ASSERT_TRUE(rc::test::poll_until([&] { return host_tier_seen(live.events()).size() > before; })) << "no block events arrived";
    ASSERT_TRUE(rc::test::poll_until(seen_is_tier)) << "the stream's picture is what /metrics counts";
    const auto events = live.events();
    uint64_t last_seq = 0;
    for (const auto & [name, data] : events) {
        if (name != "kv" && name != "tick") continue;
        last_seq = data["seq"];
        // Each carries the server's load, as its lookups report it (the gateway routes by it).
        ASSERT_TRUE(data.contains("load")) << data.dump();
        EXPECT_EQ(data["load"].value("slots", -1), 4) << data.dump();
        EXPECT_GE(data["load"].value("running", -1), 0) << data.dump();
        EXPECT_GE(data["load"].value("queued", -1), 0) << data.dump();
    }
    ASSERT_GT(last_seq, snapshot["seq"].get<uint64_t>());

    // A resume from there: no snapshot, the next event is a tick or new changes.
    const std::string epoch = snapshot["epoch"];
    event_reader resumed(port, "/v1/kv/events?epoch=" + epoch + "&since=" + std::to_string(last_seq));
    ASSERT_TRUE(rc::test::poll_until([&] { return !resumed.events().empty(); }));
    EXPECT_NE(resumed.events().front().first, "snapshot");
    // An unknown epoch: a snapshot first.
    event_reader stranger(port, "/v1/kv/events?epoch=0000&since=" + std::to_string(last_seq));
    ASSERT_TRUE(rc::test::poll_until([&] { return !stranger.events().empty(); }));
    EXPECT_EQ(stranger.events().front().first, "snapshot");

    // Bad values are refused before any stream starts.
    httplib::Client c("127.0.0.1", port);
    auto bad = c.Get("/v1/kv/events?since=-1");
    ASSERT_TRUE(bad);
    EXPECT_EQ(bad->status, 400);
    EXPECT_NE(bad->body.find("since"), std::string::npos) << bad->body;

    // The streams end when the server stops; a restarted server has another epoch.
    EXPECT_EQ(s.stop(), 0);
    ASSERT_TRUE(rc::test::poll_until([&] { return live.ended() && resumed.ended(); })) << "a stopping server ends its event streams";
}

// The context tier: a finished request's sequence stays in the context (one is kept), so its full
// blocks are announced there (the keys the host tier got for them too); the next document's
// sequence takes its place, and the stream says that as well.
TEST(kv_events, the_context_tier_follows_the_sequences_the_context_keeps) {
    const auto model = std::vector<std::pair<std::string, std::string>>{{"demo", rc::test::model_path("tiny-chat")}};
    rc::test::server_process s(model, {"--kv-host-budget", "64MiB", "--kv-cached-sequences", "1", "--kv-block-size", "16"});
    ASSERT_TRUE(s.started());
    const int port = s.openai_port();
    event_reader live(port, "/v1/kv/events");
    ASSERT_TRUE(rc::test::poll_until([&] { return !live.events().empty(); }));
    EXPECT_TRUE(tier_seen(live.events(), "context").empty()) << "nothing ran yet";

    auto context_within_host = [&] {
        const auto events = live.events();
        const auto context = tier_seen(events, "context"), host = tier_seen(events, "host");
        return !context.empty() && std::includes(host.begin(), host.end(), context.begin(), context.end());
    };
    ASSERT_TRUE(complete(port, document(0)));
    ASSERT_TRUE(rc::test::poll_until(context_within_host)) << "the kept sequence's blocks are in the context and were stored below";
    const auto first = tier_seen(live.events(), "context");
    EXPECT_GE(first.size(), 5u) << "a ~130-token document fills at least 5 blocks of 16";

    ASSERT_TRUE(complete(port, document(1)));
    ASSERT_TRUE(rc::test::poll_until([&] {
        const auto now = tier_seen(live.events(), "context");
        return context_within_host() && std::none_of(now.begin(), now.end(), [&](const std::string & k) { return first.contains(k); });
    })) << "one sequence is kept: the first document's blocks left the context when the second's came";
}

// The status GET /v1/kv/events answers with (its headers only; the stream is left at once).
std::pair<int, std::string> events_status(int port) {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(10);
    int status = -1;
    std::string retry_after;
    c.Get(
        "/v1/kv/events",
        [&](const httplib::Response & res) {
            status = res.status;
            retry_after = res.get_header_value("Retry-After");
            return false;
        },
        [](const char *, size_t) { return false; });
    return {status, retry_after};
}

TEST(kv_events, more_readers_than_the_limit_are_refused_until_one_leaves) {
    const auto model = std::vector<std::pair<std::string, std::string>>{{"demo", rc::test::model_path("tiny-chat")}};
    rc::test::server_process s(model, tier_args);
    ASSERT_TRUE(s.started());
    std::vector<std::unique_ptr<event_reader>> readers;
    for (int i = 0; i < 8; ++i) {
        readers.push_back(std::make_unique<event_reader>(s.openai_port(), "/v1/kv/events"));
        ASSERT_TRUE(rc::test::poll_until([&] { return !readers.back()->events().empty(); })) << "reader " << i << " got its snapshot";
    }
    const auto [refused, retry_after] = events_status(s.openai_port());
    EXPECT_EQ(refused, 429) << "a ninth reader";
    EXPECT_FALSE(retry_after.empty());
    // Round three: the cap was per port, so the Ollama port streamed to eight more.
    EXPECT_EQ(events_status(s.ollama_port()).first, 429) << "the cap is the server's, not a port's";
    readers.pop_back();  // leaves at its next tick; its slot is free once the server's write fails
    EXPECT_TRUE(rc::test::poll_until([&] { return events_status(s.openai_port()).first == 200; })) << "a reader left: room for another";
}

TEST(kv_events, a_restarted_server_has_another_epoch_and_its_disk_blocks_in_the_snapshot) {
    const rc::test::temp_dir tmp("kv-events");
    const auto model = std::vector<std::pair<std::string, std::string>>{{"demo", rc::test::model_path("tiny-chat")}};
    const std::vector<std::string> args = {"--kv-disk-dir", tmp.path().string(), "--kv-disk-budget", "64MiB", "--kv-host-budget", "0",
                                           "--kv-cached-sequences", "0", "--kv-block-size", "16", "--preload", "demo"};
    std::string epoch;
    {
        rc::test::server_process s(model, args);
        ASSERT_TRUE(s.started());
        ASSERT_TRUE(complete(s.openai_port(), document(2)));
        ASSERT_TRUE(rc::test::poll_until([&] { return metric(s.openai_port(), R"(rustycage_kv_tier_blocks\{model="demo",tier="disk"\})") > 0; }));
        event_reader r(s.openai_port(), "/v1/kv/events");
        ASSERT_TRUE(rc::test::poll_until([&] { return !r.events().empty(); }));
        epoch = r.events().front().second["epoch"];
    }
    // The blocks on disk once the server has stopped (its writes drained): one file each, named by its key.
    std::set<std::string> on_disk;
    for (const auto & f : std::filesystem::recursive_directory_iterator(tmp.path()))
        if (f.path().extension() == ".kvb") on_disk.insert(f.path().stem().string().substr(0, 16));
    ASSERT_FALSE(on_disk.empty());
    rc::test::server_process s(model, args);
    ASSERT_TRUE(s.started());
    event_reader r(s.openai_port(), "/v1/kv/events?epoch=" + epoch + "&since=1");
    // The preloaded model may still be loading when the snapshot is taken: then its source arrives
    // as a source_added change, with the same blocks.
    auto demo_source = [&r] {
        json source;
        for (const auto & [name, data] : r.events()) {
            if (name == "snapshot" && !data["sources"].empty()) source = data["sources"][0];
            if (name == "kv")
                for (const auto & c : data["changes"])
                    if (c["op"] == "source_added") source = c;
        }
        return source;
    };
    ASSERT_TRUE(rc::test::poll_until([&] { return !demo_source().is_null(); }));
    ASSERT_EQ(r.events().front().first, "snapshot") << "an old epoch: a snapshot first";
    EXPECT_NE(r.events().front().second["epoch"], epoch) << "a new run, a new epoch";
    const json source = demo_source();
    ASSERT_FALSE(source.is_null());
    std::set<std::string> listed;
    for (const auto & k : source["blocks"]["disk"]) listed.insert(k.get<std::string>());
    EXPECT_EQ(listed, on_disk) << "the disk tier's blocks from before the restart, by key";
}

}  // namespace
