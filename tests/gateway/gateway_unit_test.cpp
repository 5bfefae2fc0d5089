// Units of the gateway without processes: the route planner (every branch), request shapes and
// their canonical texts, the prefix index, and the host table over an in-memory etcd.
#include <cpp-httplib/httplib.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include "fake_etcd.h"
#include "support/loopback_server.h"
#include "support/port.h"
#include "gateway/host_table.h"
#include "gateway/kv_event_feed.h"
#include "gateway/model_vocabs.h"
#include "http/server_shell.h"
#include "http/stream_writer.h"
#include "gateway/prefix_index.h"
#include "gateway/request_shape.h"
#include "gateway/route_planner.h"
#include "gateway/upstream_call.h"
#include "store/model_name.h"

using namespace rc;
using namespace rc::gateway;
using json = nlohmann::json;

namespace {

route_candidate cand(const std::string & id, int busy = 0, std::optional<kv_answer> lookup = std::nullopt, double affinity = 0) {
    route_candidate c;
    c.id = id;
    c.busy = busy;
    c.slots = 4;
    c.lookup = lookup;
    c.affinity = affinity;
    return c;
}

kv_answer answer(int prompt, int ctx, int host = 0, int disk = 0) {
    kv_answer a;
    a.prompt_tokens = prompt;
    a.context = ctx;
    a.host = host;
    a.disk = disk;
    return a;
}

}  // namespace

TEST(route_planner, cached_tokens_win_and_tiers_are_weighted_context_over_host_over_disk) {
    route_weights w;
    auto p = plan_route(route_policy::cache, {cand("a", 0, answer(1000, 0, 0, 900)), cand("b", 0, answer(1000, 0, 900)), cand("c", 0, answer(1000, 0))},
                        w, 7, 0);
    ASSERT_EQ(p.order.size(), 3u);
    EXPECT_EQ(p.order[0], "b") << "900 tokens in host RAM beat 900 on disk";
    EXPECT_EQ(p.order[1], "a");
    EXPECT_EQ(p.reason, "cache_host");
    p = plan_route(route_policy::cache, {cand("a", 0, answer(1000, 800)), cand("b", 0, answer(1000, 0, 900))}, w, 7, 0);
    EXPECT_EQ(p.order[0], "a") << "800 in context (worth 800) beat 900 in host RAM (worth 765)";
    EXPECT_EQ(p.reason, "cache_context");
    p = plan_route(route_policy::cache, {cand("a", 0, answer(1000, 0, 0, 500)), cand("b", 0, answer(1000, 0))}, w, 7, 0);
    EXPECT_EQ(p.order[0], "a");
    EXPECT_EQ(p.reason, "cache_disk");
}

TEST(route_planner, load_outweighs_a_cache_once_the_host_is_occupied) {
    route_weights w;
    // Whole prompt cached on a: it wins while fewer than `slots` requests occupy it.
    for (int busy = 0; busy < 4; ++busy) {
        auto p = plan_route(route_policy::cache, {cand("a", busy, answer(1000, 999)), cand("b", 0, answer(1000, 0))}, w, 1, 0);
        EXPECT_EQ(p.order[0], "a") << "busy " << busy;
    }
    auto p = plan_route(route_policy::cache, {cand("a", 4, answer(1000, 999)), cand("b", 0, answer(1000, 0))}, w, 1, 0);
    EXPECT_EQ(p.order[0], "b") << "a fully occupied host loses to an idle one";
    EXPECT_EQ(p.reason, "load");
    // Half the prompt cached: worth half the slots.
    p = plan_route(route_policy::cache, {cand("a", 2, answer(1000, 499)), cand("b", 0, answer(1000, 0))}, w, 1, 0);
    EXPECT_EQ(p.order[0], "b");
    // A heavier load weight spreads sooner.
    route_weights heavy = w;
    heavy.load = 4;
    p = plan_route(route_policy::cache, {cand("a", 1, answer(1000, 999)), cand("b", 0, answer(1000, 0))}, heavy, 1, 0);
    EXPECT_EQ(p.order[0], "b");
}

TEST(route_planner, a_hot_prefix_spreads_over_hosts_instead_of_piling_onto_one) {
    // Requests that all share a prompt a holds, arriving while earlier ones still run: simulate the
    // gateway's in-flight counts and count where they land.
    route_weights w;
    std::map<std::string, int> busy = {{"a", 0}, {"b", 0}, {"c", 0}};
    for (int i = 0; i < 12; ++i) {
        std::vector<route_candidate> cs;
        for (const auto & [id, n] : busy) cs.push_back(cand(id, n, answer(1000, id == "a" ? 999 : 0)));
        ++busy[plan_route(route_policy::cache, cs, w, static_cast<uint64_t>(i), static_cast<uint64_t>(i)).order[0]];
    }
    EXPECT_EQ(busy["a"], 6) << "a takes up to slots + its cache advantage, not all 12";
    EXPECT_EQ(busy["b"] + busy["c"], 6);
    EXPECT_GE(std::min(busy["b"], busy["c"]), 2) << "the overflow is shared, not piled onto the next host";
}

TEST(route_planner, without_lookup_answers_affinity_decides_and_unloaded_models_cost) {
    route_weights w;
    auto p = plan_route(route_policy::cache, {cand("a", 0, std::nullopt, 0.9), cand("b", 0, std::nullopt, 0)}, w, 3, 0);
    EXPECT_EQ(p.order[0], "a");
    EXPECT_EQ(p.reason, "affinity");
    // An answer beats an estimate of the same size (the estimate is discounted).
    p = plan_route(route_policy::cache, {cand("a", 0, std::nullopt, 0.9), cand("b", 0, answer(100, 80))}, w, 3, 0);
    EXPECT_EQ(p.order[0], "b");
    // A host that would have to load the model first is the last resort.
    auto unloaded = cand("a", 0, answer(100, 0));
    unloaded.lookup->loaded = false;
    p = plan_route(route_policy::cache, {unloaded, cand("b", 3, answer(100, 0))}, w, 3, 0);
    EXPECT_EQ(p.order[0], "b");
    auto by_record = cand("a");
    by_record.model_loaded = false;
    p = plan_route(route_policy::least_loaded, {by_record, cand("b", 3)}, w, 3, 0);
    EXPECT_EQ(p.order[0], "b");
}

TEST(route_planner, equal_hosts_share_and_policies_behave_as_named) {
    route_weights w;
    std::map<std::string, int> first;
    for (uint64_t spread = 0; spread < 300; ++spread)
        ++first[plan_route(route_policy::cache, {cand("a"), cand("b"), cand("c")}, w, spread * 2654435761u, 0).order[0]];
    for (const auto & [id, n] : first) EXPECT_GT(n, 60) << id << ": ties spread across hosts";
    auto p = plan_route(route_policy::cache, {cand("a"), cand("b"), cand("c")}, w, 42, 0);
    EXPECT_EQ(p.reason, "load");
    EXPECT_EQ(plan_route(route_policy::cache, {cand("a"), cand("b"), cand("c")}, w, 42, 9).order, p.order) << "a conversation keeps its tie-break";

    // A prompt no host holds, idle hosts: the cache policy places it where the gateway has placed
    // the least, whatever the hash says; least-loaded keeps the hash.
    std::set<std::string> least_loaded_firsts;
    for (uint64_t spread = 0; spread < 50; ++spread) {
        auto a = cand("a"), b = cand("b"), c = cand("c");
        a.held = 40, b.held = 12, c.held = 25;
        EXPECT_EQ(plan_route(route_policy::cache, {a, b, c}, w, spread * 2654435761u, 0).order,
                  (std::vector<std::string>{"b", "c", "a"}));
        least_loaded_firsts.insert(plan_route(route_policy::least_loaded, {a, b, c}, w, spread * 2654435761u, 0).order[0]);
    }
    EXPECT_EQ(least_loaded_firsts.size(), 3u);
    auto busier = cand("b", 1);
    busier.held = 0;
    auto a_held = cand("a");
    a_held.held = 500;
    EXPECT_EQ(plan_route(route_policy::cache, {a_held, busier}, w, 3, 0).order[0], "a") << "load comes before what a host holds";

    // A prefix every host holds alike leaves the choice to load.
    p = plan_route(route_policy::cache, {cand("a", 1, answer(100, 50)), cand("b", 0, answer(100, 50))}, w, 1, 0);
    EXPECT_EQ(p.order[0], "b");
    EXPECT_EQ(p.reason, "load");

    // Least loaded ignores caches; round robin ignores both and rotates.
    p = plan_route(route_policy::least_loaded, {cand("a", 1, answer(100, 99)), cand("b", 0, answer(100, 0))}, w, 1, 0);
    EXPECT_EQ(p.order[0], "b");
    std::vector<std::string> rr;
    for (uint64_t t = 0; t < 4; ++t) rr.push_back(plan_route(route_policy::round_robin, {cand("b"), cand("a", 3), cand("c")}, w, 1, t).order[0]);
    EXPECT_EQ(rr, (std::vector<std::string>{"a", "b", "c", "a"}));
    EXPECT_EQ(plan_route(route_policy::round_robin, {cand("b"), cand("a")}, w, 1, 0).reason, "round_robin");
    EXPECT_EQ(plan_route(route_policy::cache, {cand("b")}, w, 1, 0).reason, "only");
    EXPECT_TRUE(plan_route(route_policy::cache, {}, w, 1, 0).order.empty());
    EXPECT_EQ(parse_route_policy("least-loaded"), route_policy::least_loaded);
    EXPECT_FALSE(parse_route_policy("random").has_value());
}

TEST(request_shape, reads_model_lookup_body_and_a_canonical_text_with_the_prefix_property) {
    json turn1 = {{"model", "tiny"}, {"messages", {{{"role", "system"}, {"content", "be brief"}}, {{"role", "user"}, {"content", "hello"}}}}};
    json turn2 = turn1;
    turn2["messages"].push_back({{"role", "assistant"}, {"content", "hi there"}});
    turn2["messages"].push_back({{"role", "user"}, {"content", std::string(600, 'x')}});
    auto s1 = shape_request("POST", "/v1/chat/completions", turn1.dump(), {});
    auto s2 = shape_request("POST", "/v1/chat/completions", turn2.dump(), {});
    ASSERT_TRUE(s1.ok() && s2.ok());
    EXPECT_EQ(s1->model, "tiny");
    EXPECT_TRUE(s1->lookup);
    EXPECT_EQ(s1->lookup_body["api"], "openai");
    EXPECT_EQ(s1->lookup_body["messages"].dump(), turn1["messages"].dump());
    EXPECT_TRUE(s2->canonical.starts_with(s1->canonical)) << "a resumed conversation extends the earlier text";

    // Another salt or model shares no prefix.
    json salted = turn2;
    salted["cache_salt"] = "tenant-b";
    EXPECT_NE(shape_request("POST", "/v1/chat/completions", salted.dump(), {})->canonical.substr(0, 12), s2->canonical.substr(0, 12));

    auto ol = shape_request("POST", "/api/chat", turn1.dump(), {});
    EXPECT_TRUE(ol->ollama);
    EXPECT_EQ(ol->lookup_body["api"], "ollama");
    auto gen = shape_request("POST", "/api/generate", R"({"model":"tiny","prompt":""})", {});
    EXPECT_FALSE(gen->lookup) << "an empty prompt loads or unloads: nothing to look up";
    auto ids = shape_request("POST", "/v1/completions", R"({"model":"tiny","prompt":[1,2,3]})", {});
    EXPECT_TRUE(ids->lookup);
    EXPECT_NE(ids->canonical.find("1,2,3,"), std::string::npos);
    auto emb = shape_request("POST", "/v1/embeddings", R"({"model":"e","input":"x"})", {});
    EXPECT_EQ(emb->model, "e");
    EXPECT_FALSE(emb->lookup);
    auto props = shape_request("GET", "/props", "", {{"model", "tiny"}});
    EXPECT_EQ(props->model, "tiny");

    EXPECT_FALSE(shape_request("POST", "/v1/chat/completions", "not json", {}).ok());
    EXPECT_FALSE(shape_request("POST", "/v1/chat/completions", R"({"model":3})", {}).ok());
    EXPECT_FALSE(shape_request("POST", "/v1/chat/completions", "[1]", {}).ok());
    // Nested beyond the hosts' depth bound: refused here, never forwarded.
    const std::string deep = R"({"model":"tiny","messages":)" + std::string(200, '[') + std::string(200, ']') + "}";
    EXPECT_FALSE(shape_request("POST", "/v1/chat/completions", deep, {}).ok());
    EXPECT_TRUE(store::same_model_name("tiny", "tiny:latest"));
    EXPECT_TRUE(store::same_model_name("tiny.gguf", "tiny"));
    EXPECT_FALSE(store::same_model_name("tiny", "tiny:q8"));
    EXPECT_FALSE(store::same_model_name(":latest", "")) << "a name that is only the suffix keeps it";
}

TEST(prefix_index, remembers_which_host_was_sent_a_prefix_and_forgets_least_recent_first) {
    prefix_index idx(8);
    const std::string conv(1024, 'a');
    const std::string longer = conv + std::string(1024, 'b');
    idx.record(prefix_chain(conv), "h1");
    auto aff = idx.affinity(prefix_chain(longer), longer.size());
    ASSERT_EQ(aff.size(), 1u);
    EXPECT_DOUBLE_EQ(aff["h1"], 0.5) << "h1 was sent the first half";
    idx.record(prefix_chain(longer), "h2");
    aff = idx.affinity(prefix_chain(longer), longer.size());
    EXPECT_DOUBLE_EQ(aff["h2"], 1.0);
    EXPECT_DOUBLE_EQ(aff["h1"], 0.5);
    EXPECT_TRUE(idx.affinity(prefix_chain(std::string(1024, 'z')), 1024).empty());
    EXPECT_LE(idx.size(), 8u);
    EXPECT_EQ(idx.held("h1"), 4u) << "h1 was sent 4 chunks";
    EXPECT_EQ(idx.held("h2"), 8u) << "h2: 8, the 4 it shares with h1 counted once for it";
    idx.record(prefix_chain(longer), "h2");
    EXPECT_EQ(idx.held("h2"), 8u) << "sending the same prompt again adds nothing";
    idx.record(prefix_chain(std::string(8 * 256, 'q')), "h3");  // 8 fresh keys push every old one out
    EXPECT_TRUE(idx.affinity(prefix_chain(longer), longer.size()).empty());
    EXPECT_EQ(idx.held("h1"), 0u);
    EXPECT_EQ(idx.held("h2"), 0u) << "forgotten keys no longer count";
    EXPECT_EQ(idx.held("h3"), 8u);
    prefix_index few(64);
    const std::string p(512, 'p');
    for (const char * h : {"h1", "h2", "h3", "h4", "h5"}) few.record(prefix_chain(p), h);
    EXPECT_EQ(few.held("h1"), 0u) << "a key remembers 4 hosts; the oldest one drops out";
    EXPECT_EQ(few.held("h5"), 2u);
    few.forget("h5");  // h5 restarted: its context is empty
    EXPECT_EQ(few.held("h5"), 0u);
    const auto after = few.affinity(prefix_chain(p), p.size());
    EXPECT_FALSE(after.contains("h5")) << "a restarted host is not remembered for what it held";
    EXPECT_TRUE(after.contains("h4")) << "the others still are";
    EXPECT_EQ(few.held("h4"), 2u);
}

TEST(upstream_call, error_frames_follow_the_stream_framing_and_lookup_replies_parse) {
    auto nd = stream_error_frame("/api/chat", "application/x-ndjson", "boom");
    EXPECT_EQ(json::parse(nd)["error"], "boom");
    auto sse = stream_error_frame("/v1/chat/completions", "text/event-stream", "boom");
    ASSERT_TRUE(sse.starts_with("data: "));
    EXPECT_EQ(json::parse(sse.substr(6))["error"]["code"], "upstream_failed");
    EXPECT_TRUE(stream_error_frame("/v1/responses", "text/event-stream", "boom").starts_with("event: error\n"));

    http::client_reply r;
    r.status = 200;
    r.body = R"({"model":"tiny","loaded":true,"prompt_tokens":100,"cached_tokens":70,"tiers":{"context":50,"host":20,"disk":0},"load":{"running":2,"queued":1,"slots":4}})";
    auto l = parse_lookup_reply(r);
    ASSERT_TRUE(l.answer.has_value());
    EXPECT_EQ(l.answer->context, 50);
    EXPECT_EQ(l.answer->host, 20);
    EXPECT_EQ(l.busy, 3);
    EXPECT_EQ(l.slots, 4);
    r.status = 503;
    EXPECT_FALSE(parse_lookup_reply(r).answer.has_value());
    EXPECT_FALSE(parse_lookup_reply(make_error(errc::unavailable, "timed out")).answer.has_value());
}

TEST(host_table, derives_states_counts_in_flight_and_ejects_until_a_restart) {
    test::fake_etcd etcd;
    fleet::fleet_keys keys;
    const int64_t lease = etcd.grant(std::chrono::seconds(60)).value();
    auto put_host = [&](const std::string & id, bool ready, int pid, const std::string & model, int64_t on = -1) {
        fleet::host_record r;
        r.id = id;
        r.openai_url = "http://127.0.0.1:" + std::to_string(1000 + pid);
        r.server.ready = ready;
        r.server.state = ready ? "ready" : "starting";
        r.server.pid = pid;
        r.models.push_back({model, "sha256-x", "ready", true, 1});
        r.models.push_back({"bad", "sha256-y", "quarantined", false, 1});
        r.load.known = true;
        r.load.running = 2;
        ASSERT_TRUE(etcd.put(keys.host(id), fleet::to_json(r).dump(), on < 0 ? lease : on).ok());
    };
    put_host("a", true, 1, "tiny");
    put_host("b", false, 2, "tiny");
    put_host("c", true, 3, "other");
    ASSERT_TRUE(etcd.put(keys.health_entry("c", "a"), R"({"state":"degraded","ready":false,"error":"timeout"})").ok());
    host_table t(etcd, keys, std::chrono::seconds(60));
    EXPECT_FALSE(t.synced());
    ASSERT_TRUE(t.refresh());
    EXPECT_TRUE(t.synced());
    EXPECT_EQ(t.state_of("a"), "up");
    EXPECT_EQ(t.state_of("b"), "degraded") << "not ready";
    EXPECT_EQ(t.state_of("c"), "degraded") << "a peer cannot reach it";
    EXPECT_EQ(t.state_of("nobody"), "down");
    // Records an agent did not write: not on a lease (put by hand), or naming another host.
    put_host("fake", true, 7, "tiny", 0);
    {
        fleet::host_record r;
        r.id = "a";
        r.openai_url = "http://127.0.0.1:1666";
        r.server.ready = true;
        ASSERT_TRUE(etcd.put(keys.host("mallory"), fleet::to_json(r).dump(), lease).ok());
    }
    ASSERT_TRUE(t.refresh());
    EXPECT_FALSE(t.host("fake") && t.host("fake")->routable()) << "not on a lease: never routed to";
    EXPECT_FALSE(t.host("mallory") && t.host("mallory")->routable()) << "names another host: never routed to";
    EXPECT_EQ(t.host("a")->url, "http://127.0.0.1:1001") << "a's own record stands";
    auto a = t.host("a").value();
    EXPECT_TRUE(a.routable());
    EXPECT_TRUE(a.serves("tiny:latest"));
    EXPECT_FALSE(a.serves("bad")) << "quarantined models are not served";
    EXPECT_EQ(a.busy(), 2) << "the record's load until the gateway knows better";

    {
        auto t1 = t.begin("a");
        auto t2 = t.begin("a");
        auto t3 = t.begin("a");
        EXPECT_EQ(t.host("a")->inflight, 3);
        EXPECT_EQ(t.host("a")->busy(), 5) << "the record (2, none of them this gateway's) and this gateway's 3";
    }
    EXPECT_EQ(t.host("a")->inflight, 0);
    t.note_load("a", 5, 8);
    EXPECT_EQ(t.host("a")->busy(), 5);
    EXPECT_EQ(t.host("a")->slots, 8);
    {
        auto t1 = t.begin("a");
        auto t2 = t.begin("a");
        t.note_load("a", 3, -1);  // reported with two of this gateway's requests running
        EXPECT_EQ(t.host("a")->busy(), 3);
        EXPECT_EQ(t.host("a")->slots, 8) << "-1 keeps the slots";
    }
    EXPECT_EQ(t.host("a")->busy(), 1) << "this gateway's finished requests no longer count; the other sender's one does";

    t.eject("a");
    EXPECT_FALSE(t.host("a")->routable());
    put_host("a", true, 9, "tiny");  // its agent restarted the server
    ASSERT_TRUE(t.refresh());
    EXPECT_TRUE(t.host("a")->routable()) << "a new server is not held to the old one's failure";

    ASSERT_TRUE(etcd.del(keys.host("a")).ok());
    ASSERT_TRUE(t.refresh());
    EXPECT_EQ(t.state_of("a"), "unreachable") << "its lease lapsed: routed on its last record until its server is probed";
    EXPECT_EQ(t.host("a")->url, "http://127.0.0.1:1009") << t.to_json().dump();
    t.probe_lapsed(std::chrono::milliseconds(500));
    EXPECT_EQ(t.state_of("a"), "down") << "its server does not answer either";
    EXPECT_FALSE(t.host("a")->routable());
    etcd.set_down(true);
    EXPECT_FALSE(t.refresh());
    EXPECT_EQ(t.state_of("b"), "degraded") << "an etcd outage keeps the last picture";
}

// Round three: a host whose lease lapsed and whose one probe failed was forgotten until it
// registered again; during an etcd NOSPACE alarm its restarted server answered 200 for 50 s while the
// gateway sent it nothing. A silent lapsed host is probed on, with backoff: 1, 2, 4, then every 8
// rounds; one that answers is routable again without registering.
TEST(host_table, a_lapsed_host_whose_server_answers_again_is_routable_without_registering) {
    test::fake_etcd etcd;
    fleet::fleet_keys keys;
    const int64_t lease = etcd.grant(std::chrono::seconds(60)).value();
    const int port = test::free_port();
    fleet::host_record r;
    r.id = "a";
    r.openai_url = "http://127.0.0.1:" + std::to_string(port);
    r.server.ready = true;
    r.server.state = "ready";
    r.server.pid = 1;
    r.models.push_back({"tiny", "sha256-x", "ready", true, 1});
    ASSERT_TRUE(etcd.put(keys.host("a"), fleet::to_json(r).dump(), lease).ok());
    host_table t(etcd, keys, std::chrono::seconds(60));
    ASSERT_TRUE(t.refresh());
    ASSERT_EQ(t.state_of("a"), "up");
    ASSERT_TRUE(etcd.del(keys.host("a")).ok());  // its lease lapsed (the agent cannot reach etcd)
    ASSERT_TRUE(t.refresh());
    t.probe_lapsed(std::chrono::milliseconds(300));  // nothing listens there: down
    EXPECT_EQ(t.state_of("a"), "down");
    EXPECT_FALSE(t.host("a")->routable());

    // Its server answers again; the agent still has not registered. Rounds until the gateway sees it.
    std::atomic<int> probes{0};
    auto server = std::make_unique<test::loopback_server>();
    server->http.Get("/v1/health/ready", [&](const httplib::Request &, httplib::Response & res) {
        ++probes;
        res.set_content(R"({"status":"ready"})", "application/json");
    });
    ASSERT_TRUE(server->start(port));
    int rounds = 0;
    while (t.state_of("a") != "unreachable" && rounds < 20) {
        t.probe_lapsed(std::chrono::milliseconds(300));
        ++rounds;
    }
    EXPECT_EQ(t.state_of("a"), "unreachable") << t.to_json().dump();
    EXPECT_LE(rounds, 2) << "the backoff was at its start: seen within 2 rounds";
    EXPECT_TRUE(t.host("a")->routable()) << "routed on its last record again";
    EXPECT_EQ(t.host("a")->url, r.openai_url);

    // It stops again: down at the next round, then probed after 1, 2, 4, 8, 8... rounds.
    server.reset();
    t.probe_lapsed(std::chrono::milliseconds(300));
    EXPECT_EQ(t.state_of("a"), "down");
    probes = 0;
    server = std::make_unique<test::loopback_server>();
    server->http.Get("/v1/health/ready", [&](const httplib::Request &, httplib::Response & res) {
        ++probes;
        res.status = 503;  // answers, but not ready: still down, and counted
    });
    ASSERT_TRUE(server->start(port));
    for (int i = 0; i < 24; ++i) t.probe_lapsed(std::chrono::milliseconds(300));
    server.reset();
    // After the silence above: waits of 0 (gap 1), 1, 3, 7, 7 rounds between probes: probes at rounds
    // 1, 3, 7, 15, 23 of these 24.
    EXPECT_EQ(probes.load(), 5) << "backoff doubling to every 8 rounds";
    EXPECT_EQ(t.state_of("a"), "down");
    // It registers again: no backoff left, up on its new record.
    ASSERT_TRUE(etcd.put(keys.host("a"), fleet::to_json(r).dump(), lease).ok());
    ASSERT_TRUE(t.refresh());
    EXPECT_EQ(t.state_of("a"), "up");
}

// The candidates a routed request reads: one shared list per model until the table changes (an
// in-flight count or a reported load is no change: loads() reads those now), an ejection taking a
// host out at once and its end bringing it back on time.
TEST(host_table, routable_hosts_are_shared_until_a_change_and_loads_are_read_now) {
    test::fake_etcd etcd;
    fleet::fleet_keys keys;
    const int64_t lease = etcd.grant(std::chrono::seconds(60)).value();
    auto put_host = [&](const std::string & id, const std::string & model, bool loaded) {
        fleet::host_record r;
        r.id = id;
        r.openai_url = "http://127.0.0.1:" + std::to_string(2000 + id[0]);
        r.server.ready = true;
        r.server.state = "ready";
        r.server.pid = 1;
        r.models.push_back({model, "sha256-x", "ready", loaded, 1});
        ASSERT_TRUE(etcd.put(keys.host(id), fleet::to_json(r).dump(), lease).ok());
    };
    put_host("a", "tiny", true);
    put_host("b", "tiny", false);
    put_host("c", "other", true);
    host_table t(etcd, keys, std::chrono::milliseconds(300));
    ASSERT_TRUE(t.refresh());
    auto ids = [](const host_table::candidate_set & s) {
        std::vector<std::string> out;
        for (const auto & h : s.hosts) out.push_back(h.id);
        return out;
    };
    const auto tiny = t.routable("tiny:latest");
    EXPECT_EQ(ids(*tiny), (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(tiny->loaded, (std::vector<char>{1, 0})) << "as the records say";
    EXPECT_EQ(ids(*t.routable("")), (std::vector<std::string>{"a", "b", "c"})) << "no model named: every routable host";
    EXPECT_TRUE(t.routable("nope")->hosts.empty());
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(t.routable("made-up-" + std::to_string(i))->hosts.empty());
    EXPECT_EQ(t.routable("tiny:latest"), tiny) << "names no host serves are not kept, so they evict no model's list";
    std::vector<host_load> loads;
    {
        auto busy = t.begin("a");
        t.note_load("b", 3, 8);
        EXPECT_EQ(t.routable("tiny:latest"), tiny) << "loads change no candidate: the list is shared, not rebuilt";
        t.loads(*tiny, loads);
        ASSERT_EQ(loads.size(), 2u);
        EXPECT_EQ(loads[0].inflight, 1);
        EXPECT_EQ(loads[1].busy(), 3);
        EXPECT_EQ(loads[1].slots, 8);
    }
    t.loads(*tiny, loads);
    EXPECT_EQ(loads[0].inflight, 0) << "read now, not when the list was built";

    t.eject("b");
    const auto after = t.routable("tiny:latest");
    EXPECT_EQ(ids(*after), (std::vector<std::string>{"a"})) << "an ejected host is out at once";
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (t.routable("tiny:latest")->hosts.size() < 2 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(ids(*t.routable("tiny:latest")), (std::vector<std::string>{"a", "b"})) << "back when its ejection ends";

    put_host("a", "other", true);  // a now serves another model
    ASSERT_TRUE(t.refresh());
    EXPECT_EQ(ids(*t.routable("tiny:latest")), (std::vector<std::string>{"b"})) << "a changed record rebuilds the list";
}

// A host whose KV events carry a field of the wrong type: the feed drops that stream (no exception
// leaves its thread), reconnects without resuming, and takes the good snapshot the host sends next.
// A routable host at a local port, as the host table would list it.
static host_view up_host(const std::string & id, int port) {
    host_view h;
    h.id = id;
    h.state = "up";
    h.url = "http://127.0.0.1:" + std::to_string(port);
    return h;
}

TEST(kv_event_feed, a_malformed_event_drops_the_stream_and_the_next_snapshot_is_taken_whole) {
    std::atomic<int> connections{0};
    std::atomic<bool> done{false};
    std::vector<std::string> queries;
    std::mutex qmu;
    http::listeners host;
    auto routes = [&] {
        return std::vector<http::route>{{"GET", "/v1/kv/events", [&](const http::http_request & req) {
                                             {
                                                 std::lock_guard lock(qmu);
                                                 queries.push_back(req.query.count("since") ? "resume" : "fresh");
                                             }
                                             const int n = ++connections;
                                             return http::streamed_response("text/event-stream", {}, [n, &done](http::stream_writer & w) {
                                                 const json block_size = n == 1 ? json("sixty-four") : json(64);
                                                 const json snap = {{"epoch", "e1"}, {"seq", 5},
                                                                    {"sources", {{{"source", 1}, {"model", "m"}, {"block_size", block_size}, {"identity", "id"},
                                                                                  {"blocks", {{"host", {"00112233445566778899", "8899aabbccddeeff"}}}}}}}};
                                                 if (!w.write("event: snapshot\ndata: " + snap.dump() + "\n\n")) return;
                                                 while (w.alive() && !done)
                                                     if (!w.write("event: tick\ndata: {\"seq\":5,\"load\":{\"running\":2,\"queued\":1,\"slots\":4}}\n\n")) return;
                                                     else std::this_thread::sleep_for(std::chrono::milliseconds(100));
                                             });
                                         }}};
    };
    ASSERT_TRUE(host.start("127.0.0.1", {0}, routes, http::http_server_options{}).ok());
    block_index index;
    std::mutex load_mu;
    std::vector<std::tuple<std::string, int, int>> loads;
    kv_event_feed feed(index, kv_feed_options{"", std::chrono::milliseconds(3000), std::chrono::milliseconds(50), [&](const std::string & id, int busy, int slots) {
                                                  std::lock_guard lock(load_mu);
                                                  loads.emplace_back(id, busy, slots);
                                              }, nullptr});
    const host_view h = up_host("h1", host.port(0));
    feed.follow({h});
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!(feed.trusted("h1") && index.blocks("h1") == 2) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_TRUE(feed.trusted("h1")) << feed.to_json().dump();
    EXPECT_EQ(index.blocks("h1"), 2u);
    EXPECT_EQ(connections.load(), 2);
    {
        std::lock_guard lock(qmu);
        EXPECT_EQ(queries, (std::vector<std::string>{"fresh", "fresh"})) << "the malformed stream is not resumed";
    }
    {
        std::vector<kv_event_feed::host_keys> keys;
        const std::vector<host_view> asked{h, up_host("h2", host.port(0))};
        feed.keys_for("m", feed.numbers(asked), keys);
        ASSERT_EQ(keys.size(), 2u);
        ASSERT_TRUE(keys[0].trusted && keys[0].keys);
        EXPECT_EQ(keys[0].keys->block_size, 64);
        EXPECT_FALSE(keys[1].trusted) << "no stream to h2";
        feed.keys_for("other", feed.numbers(asked), keys);
        EXPECT_TRUE(keys[0].trusted && !keys[0].keys) << "trusted, no source for that model";
    }
    auto have_load = [&] {
        std::lock_guard lock(load_mu);
        return !loads.empty();
    };
    while (!have_load() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    {
        std::lock_guard lock(load_mu);
        ASSERT_FALSE(loads.empty()) << "the ticks' load reaches the router";
        EXPECT_EQ(loads.back(), std::make_tuple(std::string("h1"), 3, 4)) << "running + queued, and the slots";
    }
    done = true;
    feed.stop();
    host.stop();
}

// A host whose snapshot carries a new epoch restarted (its context and host tier are empty): the
// feed says so, once, across streams (a killed host's stream ends and its restart opens another);
// a snapshot of the same epoch (a reconnect) is not a restart.
TEST(kv_event_feed, a_new_epoch_is_reported_as_a_restart_once) {
    std::atomic<int> connections{0};
    http::listeners host;
    auto routes = [&] {
        return std::vector<http::route>{{"GET", "/v1/kv/events", [&](const http::http_request &) {
                                             const int n = ++connections;
                                             return http::streamed_response("text/event-stream", {}, [n](http::stream_writer & w) {
                                                 const json snap = {{"epoch", n < 3 ? "e1" : "e2"}, {"seq", 1}, {"sources", json::array()}};
                                                 if (!w.write("event: snapshot\ndata: " + snap.dump() + "\n\n")) return;
                                                 // The first two streams end (a reconnect, then the host's restart); the third stays.
                                                 for (int i = 0; w.alive() && (n >= 3 || i < 2); ++i)
                                                     if (!w.write("event: tick\ndata: {\"seq\":1}\n\n")) return;
                                                     else std::this_thread::sleep_for(std::chrono::milliseconds(20));
                                             });
                                         }}};
    };
    ASSERT_TRUE(host.start("127.0.0.1", {0}, routes, http::http_server_options{}).ok());
    block_index index;
    std::mutex mu;
    std::vector<std::string> restarts;
    kv_event_feed feed(index, kv_feed_options{"", std::chrono::milliseconds(3000), std::chrono::milliseconds(20), nullptr, [&](const std::string & id) {
                                                  std::lock_guard lock(mu);
                                                  restarts.push_back(id);
                                              }});
    const host_view h = up_host("h1", host.port(0));
    feed.follow({h});
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    auto seen = [&] {
        std::lock_guard lock(mu);
        return restarts.size();
    };
    while ((connections.load() < 3 || seen() == 0) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    feed.follow({});  // the host leaves the fleet: its stream ends …
    feed.follow({h});  // … and comes back: the epoch it says is still e2
    while (connections.load() < 4 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    while (!feed.trusted("h1") && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    feed.stop();
    host.stop();
    std::lock_guard lock(mu);
    EXPECT_GE(connections.load(), 4);
    EXPECT_EQ(restarts, std::vector<std::string>{"h1"}) << "e1 → e1 is a reconnect, e1 → e2 a restart, e2 → e2 again none";
}

// A host slow to send one model's vocabulary must not hold up another model's: the fetches run side
// by side (with one worker the second fetch waited for the first, up to its 30 s timeout).
TEST(model_vocabs, a_slow_fetch_delays_no_other_model) {
    std::mutex mu;
    std::condition_variable cv;
    bool release = false;
    model_vocabs vocabs([&](const std::string &, const std::string & model) -> result<std::string> {
        if (model == "slow") {
            std::unique_lock lock(mu);
            cv.wait(lock, [&] { return release; });
        }
        return make_error(errc::unavailable, "no vocabulary here");
    });
    EXPECT_EQ(vocabs.get("slow", "http://h1"), nullptr);
    EXPECT_EQ(vocabs.get("fast", "http://h2"), nullptr);
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (vocabs.to_json()["fast"]["state"] != "failed" && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const auto states = vocabs.to_json();
    EXPECT_EQ(states["fast"]["state"], "failed") << states.dump();
    EXPECT_EQ(states["slow"]["state"], "fetching") << states.dump();
    EXPECT_EQ(vocabs.get("fast", "http://h2"), nullptr) << "a failed fetch is not retried at once";
    {
        std::lock_guard lock(mu);
        release = true;
    }
    cv.notify_all();
}
