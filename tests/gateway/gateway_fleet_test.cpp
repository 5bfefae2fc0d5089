// The gateway over a real fleet: one etcd member, three real agents (h1, h2, h3) each supervising a
// real `rustycage serve` on the generated tiny model ("tiny"; h3 also serves "solo"), and the
// gateway in process on free ports. Where a request went is read from the gateway's own metrics
// (rustycage_gateway_routed_total{host,reason}) and the X-Rustycage-Host / X-Rustycage-Route headers.
#include <signal.h>

#include <atomic>
#include <mutex>
#include <thread>

#include <cpp-httplib/httplib.h>

#include "fleet/host/server_probe.h"
#include "fleet_test_fixture.h"
#include "gateway/gateway_server.h"

using namespace rc;
using namespace rc::test;
using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

// Long enough to span several KV blocks; unique per test through `tag`.
std::string long_prompt(const std::string & tag) {
    std::string out = "Conversation " + tag + ". ";
    for (int i = 0; i < 12; ++i) out += "The " + tag + " archive keeps record number " + std::to_string(i) + " about rivers and bridges. ";
    return out;
}

std::string chat_body(const std::string & model, const std::string & content, int max_tokens, bool stream = false) {
    return json{{"model", model}, {"messages", {{{"role", "user"}, {"content", content}}}}, {"max_tokens", max_tokens}, {"temperature", 0},
                {"stream", stream}}
        .dump();
}

class gateway_fleet : public fleet_fixture {
  protected:
    void SetUp() override {
        REQUIRE_ETCD();
        ASSERT_NO_FATAL_FAILURE(start_cluster(1, {"h1", "h2", "h3"}));
        // h3 alone serves "solo" (the same weights under another name).
        std::filesystem::create_directories(root.path() / "h3" / "models");
        std::filesystem::create_symlink(std::string(RC_TEST_MODELS_DIR) + "/tiny-chat.gguf", root.path() / "h3" / "models" / "solo.gguf");
        for (const char * id : {"h1", "h2", "h3"}) add_agent(id);
        ASSERT_TRUE(poll_until([&] { return ready("h1") && ready("h2") && ready("h3"); }, 90s)) << logs();
        for (const char * id : {"h1", "h2", "h3"}) ASSERT_TRUE(serves(record(id)->openai_url)) << id << " loads and serves tiny";

        gw_etcd = std::make_unique<fleet::etcd_gateway>(as("viewer"));  // the gateway reads only
        ASSERT_NO_FATAL_FAILURE(start_gateway(true));
    }
    // (Re)starts the gateway; without the block index it asks every host, as --kv-index=false.
    void start_gateway(bool use_index) {
        if (gw) gw->stop();
        gateway::gateway_options o;
        o.lookup_timeout = 500ms;
        o.lookup_grace = 500ms;
        o.use_index = use_index;
        gw = std::make_unique<gateway::gateway_server>(*gw_etcd, keys, o, 30s);
        rc::gateway::gateway_listen listen;
        listen.openai_port = 0;
        listen.ollama_port = 0;
        ASSERT_TRUE(gw->start(listen).ok());
        base = "http://127.0.0.1:" + std::to_string(gw->openai_port());
        ASSERT_TRUE(poll_until([&] { return up_hosts() == 3; }, 30s)) << gw->context().hosts.to_json().dump();
    }
    void TearDown() override {
        if (gw) gw->stop();
    }
    std::unique_ptr<fleet::etcd_gateway> gw_etcd;

    int up_hosts() {
        int n = 0;
        for (const auto & h : gw->context().hosts.hosts()) n += h.routable() && h.serves("tiny");
        return n;
    }
    std::string state(const std::string & id) { return gw->context().hosts.state_of(id); }
    bool agents_log_has(const std::string & id, const std::string & text) {
        for (const auto & a : agents)
            if (a->id() == id) return a->log().find(text) != std::string::npos;
        return false;
    }

    result<http::client_reply> post(const std::string & path, const std::string & body, std::chrono::milliseconds timeout = 60s) {
        http::client_request r;
        r.method = "POST";
        r.url = base + path;
        r.headers = {"Content-Type: application/json"};
        r.body = body;
        r.timeout = timeout;
        return http::call(r);
    }
    // A conversation the gateway routed to host `id` (so it remembers it there): `prompt` under
    // numbered openings until one lands on it (the planner spreads fresh ones by hash); "" if none did.
    std::string conversation_on(const std::string & id, const std::string & prompt) {
        for (int i = 0; i < 12; ++i) {
            const std::string conversation = std::to_string(i) + prompt;
            auto r = post("/v1/chat/completions", chat_body("tiny", conversation, 2));
            EXPECT_TRUE(r.ok() && r->ok());
            if (r.ok() && r->header("X-Rustycage-Host") == id) return conversation;
        }
        return "";
    }
    // Runs a short chat of `prompt` straight on host `id` (not through the gateway): its blocks stay there.
    void run_on(const std::string & id, const std::string & prompt) {
        http::client_request direct;
        direct.method = "POST";
        direct.url = record(id)->openai_url + "/v1/chat/completions";
        direct.headers = {"Content-Type: application/json"};
        direct.body = chat_body("tiny", prompt, 2);
        direct.timeout = 60s;
        auto answered = http::call(direct);
        ASSERT_TRUE(answered.ok() && answered->ok()) << (answered.ok() ? answered->body : answered.err().message);
    }
    // rustycage_gateway_routed_total for `host` (and `reason`, when given).
    double routed(const std::string & host, const std::string & reason = "") {
        double sum = 0;
        for (const auto & s : fleet::parse_prometheus_text(gw->context().metrics.expose())) {
            if (s.name != "rustycage_gateway_routed_total" || s.labels.at("host") != host) continue;
            if (reason.empty() || s.labels.at("reason") == reason) sum += s.value;
        }
        return sum;
    }
    double routed_total() { return routed("h1") + routed("h2") + routed("h3"); }
    // The server pid the host record names (the agent's child).
    int server_pid(const std::string & id) {
        auto r = record(id);
        return r ? r->server.pid : 0;
    }

    std::unique_ptr<gateway::gateway_server> gw;
    std::string base;
};

}  // namespace

TEST_F(gateway_fleet, a_model_only_one_host_has_is_routed_there_and_hostile_input_is_refused_before_forwarding) {
    for (int i = 0; i < 4; ++i) {
        auto r = post("/v1/chat/completions", chat_body("solo", "hello " + std::to_string(i), 2));
        ASSERT_TRUE(r.ok()) << r.err().message;
        EXPECT_EQ(r->status, 200) << r->body;
        EXPECT_EQ(r->header("X-Rustycage-Host"), "h3");
        EXPECT_EQ(r->header("X-Rustycage-Route"), "only");
    }
    EXPECT_EQ(routed("h3", "only"), 4);

    const double before = routed_total();
    auto unknown = post("/v1/chat/completions", chat_body("nope", "hi", 2));
    ASSERT_TRUE(unknown.ok());
    EXPECT_EQ(unknown->status, 404) << unknown->body;
    EXPECT_NE(unknown->body.find("not found on any host"), std::string::npos) << unknown->body;
    auto ollama_unknown = post("/api/chat", json{{"model", "nope"}, {"messages", json::array()}}.dump());
    ASSERT_TRUE(ollama_unknown.ok());
    EXPECT_EQ(ollama_unknown->status, 404);
    EXPECT_TRUE(json::parse(ollama_unknown->body, nullptr, false).contains("error")) << "Ollama's error shape";
    for (const char * bad : {"{not json", "[1,2]", R"({"model":7,"messages":[]})"}) {
        auto r = post("/v1/chat/completions", bad);
        ASSERT_TRUE(r.ok());
        EXPECT_EQ(r->status, 400) << bad << " → " << r->body;
    }
    EXPECT_EQ(routed_total(), before) << "nothing hostile was forwarded";

    // The union of the fleet's models.
    http::client_request models;
    models.url = base + "/v1/models";
    auto m = http::call(models);
    ASSERT_TRUE(m.ok() && m->ok());
    std::set<std::string> ids;
    const json listed = json::parse(m->body);
    for (const auto & e : listed["data"]) ids.insert(e["id"].get<std::string>());
    EXPECT_TRUE(ids.count("tiny") && ids.count("solo")) << m->body;
    models.url = base + "/api/tags";
    auto tags = http::call(models);
    ASSERT_TRUE(tags.ok() && tags->ok());
    EXPECT_EQ(json::parse(tags->body)["models"].size(), 2u) << tags->body;
}

TEST_F(gateway_fleet, a_cached_prefix_is_routed_to_its_host_and_a_hot_one_spreads) {
    // h2 alone has run this conversation: its lookup reports the prompt in its context.
    const std::string prompt = long_prompt("cache");
    ASSERT_NO_FATAL_FAILURE(run_on("h2", prompt));

    auto r = post("/v1/chat/completions", chat_body("tiny", prompt, 2));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(r->header("X-Rustycage-Host"), "h2");
    // From h2's lookup (the prompt in its context) or, once the gateway has the model's vocabulary,
    // from the block index (the prompt's blocks in h2's host RAM): the cache decided either way.
    const std::string reason = r->header("X-Rustycage-Route");
    EXPECT_TRUE(reason == "cache_context" || reason == "cache_host") << reason;
    EXPECT_EQ(routed("h2", reason), 1);
    // The gateway's explanation agrees.
    auto why = post("/v1/kv/lookup", json{{"model", "tiny"}, {"messages", {{{"role", "user"}, {"content", prompt}}}}}.dump());
    ASSERT_TRUE(why.ok() && why->ok()) << (why.ok() ? why->body : why.err().message);
    EXPECT_EQ(json::parse(why->body)["chosen"], "h2") << why->body;

    // Six long streams of the same hot conversation, each started once the previous one streams:
    // the gateway's in-flight counts grow on h2 until another host is the better choice.
    std::vector<std::thread> streams;
    std::vector<std::string> hosts(6);
    std::atomic<int> started{0};
    for (int i = 0; i < 6; ++i) {
        streams.emplace_back([&, i] {
            http::client_request s;
            s.method = "POST";
            s.url = base + "/v1/chat/completions";
            s.headers = {"Content-Type: application/json"};
            s.body = chat_body("tiny", prompt, 300, true);
            s.timeout = 300s;  // six at once on lavapipe (make test-vulkan) take minutes
            bool first = true;
            auto end = http::stream(
                s,
                [&](std::string_view) {
                    if (first) ++started;
                    first = false;
                    return true;
                },
                [] { return false; });
            if (end.ok()) hosts[i] = end->header("X-Rustycage-Host");
            if (first) ++started;
        });
        ASSERT_TRUE(poll_until([&] { return started.load() > i; }, 60s));
    }
    for (auto & t : streams) t.join();
    std::map<std::string, int> by_host;
    for (const auto & h : hosts) ++by_host[h];
    EXPECT_GE(by_host.size(), 2u) << "a hot conversation spreads: h2=" << by_host["h2"] << " h1=" << by_host["h1"] << " h3=" << by_host["h3"];
    EXPECT_LE(by_host["h2"], 4);
}

TEST_F(gateway_fleet, a_host_that_dies_before_answering_is_retried_elsewhere_and_a_down_host_gets_nothing) {
    // The gateway learns that h1 holds this conversation (affinity), then h1's server stops
    // answering: its lookup times out, affinity still picks h1, the connection is accepted by the
    // kernel and nothing comes back — until the server is killed and the request fails over.
    // Routed by lookups: from the block index, h1 (its event stream silent for less than the 3 s
    // it stays trusted) would be credited from the index or not, as the events happened to arrive.
    ASSERT_NO_FATAL_FAILURE(start_gateway(false));
    const std::string conversation = conversation_on("h1", long_prompt("failover"));
    ASSERT_FALSE(conversation.empty()) << "some request went to h1";
    const int pid = server_pid("h1");
    ASSERT_GT(pid, 0);
    ASSERT_EQ(::kill(pid, SIGSTOP), 0);

    std::optional<result<http::client_reply>> answer;
    std::thread client([&] { answer = post("/v1/chat/completions", chat_body("tiny", conversation, 2), 120s); });
    const bool waited_on_h1 = poll_until([&] {
        auto h = gw->context().hosts.host("h1");
        return h && h->inflight == 1;
    }, 20s);
    ::kill(pid, SIGKILL);
    client.join();
    ASSERT_TRUE(waited_on_h1) << "the request was sent to h1";
    ASSERT_TRUE(answer && answer->ok()) << (answer ? answer->err().message : "no answer");
    EXPECT_EQ((*answer)->status, 200) << (*answer)->body;
    EXPECT_NE((*answer)->header("X-Rustycage-Host"), "h1");
    EXPECT_EQ((*answer)->header("X-Rustycage-Route"), "failover");
    EXPECT_EQ(routed("h1", "affinity"), 1) << "lookups timed out: affinity chose h1";
    EXPECT_EQ(routed("h2", "failover") + routed("h3", "failover"), 1);

    // Now h1 dies for good (agent and server): once its lease expires it is down and gets nothing.
    agents[0]->kill_agent(server_pid("h1"));
    ASSERT_TRUE(poll_until([&] { return state("h1") == "down"; }, 30s)) << gw->context().hosts.to_json().dump();
    const double h1_before = routed("h1");
    for (int i = 0; i < 6; ++i) {
        auto r = post("/v1/chat/completions", chat_body("tiny", "after " + std::to_string(i), 2));
        ASSERT_TRUE(r.ok() && r->ok());
        EXPECT_NE(r->header("X-Rustycage-Host"), "h1");
    }
    EXPECT_EQ(routed("h1"), h1_before) << "a down host gets no traffic";
}

TEST_F(gateway_fleet, a_stream_that_dies_midway_ends_with_an_error_in_the_dialects_shape) {
    http::client_request s;
    s.method = "POST";
    s.url = base + "/api/chat";
    s.headers = {"Content-Type: application/json"};
    s.body = json{{"model", "tiny"}, {"messages", {{{"role", "user"}, {"content", "tell a long story"}}}}, {"stream", true},
                  {"options", {{"num_predict", 600}, {"temperature", 0}}}}
                 .dump();
    s.timeout = 120s;
    std::string body;
    bool killed = false;
    auto end = http::stream(
        s,
        [&](std::string_view d) {
            body.append(d);
            if (!killed && std::count(body.begin(), body.end(), '\n') >= 3) {
                killed = true;
                // Which host streams is in no chunk: ask the gateway for the one with a request in flight.
                for (const auto & h : gw->context().hosts.hosts())
                    if (h.inflight > 0) ::kill(server_pid(h.id), SIGKILL);
            }
            return true;
        },
        [] { return false; });
    ASSERT_TRUE(end.ok()) << end.err().message;
    ASSERT_TRUE(killed) << body;
    std::vector<json> lines;
    for (size_t at = 0, nl; (nl = body.find('\n', at)) != std::string::npos; at = nl + 1) lines.push_back(json::parse(body.substr(at, nl - at), nullptr, false));
    ASSERT_FALSE(lines.empty());
    EXPECT_TRUE(lines.back().contains("error")) << "the last line is Ollama's error shape: " << body.substr(body.size() > 400 ? body.size() - 400 : 0);
    EXPECT_FALSE(lines.back().value("done", false));
    int done = 0;
    for (const auto & l : lines) done += l.value("done", false);
    EXPECT_EQ(done, 0) << "never a second (retried) answer";
}

// Only an agent writes hosts/<id>: a record anyone else puts there — refused by etcd for an operator
// or another agent, ignored by the gateway when root puts it by hand — never receives a request, so
// no prompt and no client credential goes to the address it names.
TEST_F(gateway_fleet, a_host_record_not_written_by_an_agent_never_receives_a_request) {
    httplib::Server trap;
    std::atomic<int> hits{0};
    std::mutex mu;
    std::string what;
    trap.set_pre_routing_handler([&](const httplib::Request & req, httplib::Response & res) {
        ++hits;
        std::lock_guard lock(mu);
        what += req.method + " " + req.path + "\n";
        res.set_content(R"({"error":"trap"})", "application/json");
        return httplib::Server::HandlerResponse::Handled;
    });
    const int port = trap.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port, 0);
    std::thread serving([&] { trap.listen_after_bind(); });
    auto fake = [&](const std::string & id) {
        fleet::host_record r;
        r.id = id;
        r.openai_url = "http://127.0.0.1:" + std::to_string(port);
        r.server.ready = true;
        r.server.state = "ready";
        r.models.push_back({"tiny", "sha256-x", "ready", true, 1});
        r.models.push_back({"trapmodel", "sha256-y", "ready", true, 1});
        return fleet::to_json(r).dump();
    };
    fleet::etcd_gateway ops(as("ops")), agent_h1(as("h1")), admin(as("root"));
    EXPECT_EQ(ops.put(keys.host("fake"), fake("fake")).err().code, errc::permission_denied) << "an operator registers no host";
    EXPECT_EQ(agent_h1.put(keys.host("fake"), fake("fake")).err().code, errc::permission_denied) << "an agent registers only itself";
    ASSERT_TRUE(admin.put(keys.host("fake"), fake("fake")).ok());  // by hand: on no lease
    const int64_t lease = admin.grant(60s).value();
    ASSERT_TRUE(admin.put(keys.host("mallory"), fake("h1"), lease).ok());  // names another host
    ASSERT_TRUE(poll_until([&] { return gw->context().hosts.host("fake") && gw->context().hosts.host("mallory"); }, 30s))
        << "the gateway saw both writes";
    EXPECT_FALSE(gw->context().hosts.host("fake")->routable());
    EXPECT_FALSE(gw->context().hosts.host("mallory")->routable());
    for (int i = 0; i < 6; ++i) {
        auto r = post("/v1/chat/completions", chat_body("tiny", "to whom " + std::to_string(i), 2));
        ASSERT_TRUE(r.ok() && r->ok()) << (r.ok() ? r->body : r.err().message);
        EXPECT_TRUE(r->header("X-Rustycage-Host").starts_with("h")) << r->header("X-Rustycage-Host");
    }
    auto trapped = post("/v1/chat/completions", chat_body("trapmodel", "hi", 2));
    ASSERT_TRUE(trapped.ok());
    EXPECT_EQ(trapped->status, 404) << "only the fake records have it: " << trapped->body;
    // Nor do the agents probe it as a peer.
    for (const char * id : {"h1", "h2", "h3"})
        ASSERT_TRUE(poll_until([&] { return agents_log_has(id, "host_record_ignored"); }, 30s)) << id << " saw both writes";
    std::lock_guard lock(mu);
    EXPECT_EQ(hits.load(), 0) << "the address in a record no agent wrote got requests:\n" << what;
    trap.stop();
    serving.join();
}

// The block index follows every host's KV events (GET /v1/kv/events, gateway/kv_event_feed.h): a
// conversation's blocks reach it, a killed server's stream breaks and the host is untrusted at once,
// and its restart (a new epoch) replaces what the index held with what the new server holds.
TEST_F(gateway_fleet, the_block_index_follows_each_hosts_kv_events_and_a_killed_host_is_untrusted_at_once) {
    auto & g = gw->context();
    auto feed = [&] { return g.kv_feed.to_json(); };
    ASSERT_TRUE(poll_until([&] {
        const auto f = feed();
        for (const char * id : {"h1", "h2", "h3"})
            if (!f.contains(id) || !f[id]["trusted"].get<bool>()) return false;
        return true;
    }, 30s)) << feed().dump();

    // A conversation sent straight to h2 leaves blocks in its tiers; they reach the index.
    const size_t before = g.blocks.blocks("h2");
    ASSERT_NO_FATAL_FAILURE(run_on("h2", long_prompt("indexed")));
    ASSERT_TRUE(poll_until([&] { return g.blocks.blocks("h2") > before; }, 30s)) << feed().dump();

    // kill -9 of h2's server: its stream breaks, the host is untrusted at once.
    const std::string epoch = feed()["h2"]["epoch"];
    const int pid = server_pid("h2");
    ASSERT_GT(pid, 0);
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    const auto killed = std::chrono::steady_clock::now();
    ASSERT_TRUE(poll_until([&] { return !g.kv_feed.trusted("h2"); }, 10s));
    const auto untrusted_ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - killed).count();
    EXPECT_LT(untrusted_ms, 3000) << "within one event round trip (a tick comes every second)";

    // The agent restarts it: a new epoch, a snapshot, and the index holds for h2 what the new server holds.
    ASSERT_TRUE(poll_until([&] {
        const auto f = feed();
        return f.contains("h2") && f["h2"]["trusted"].get<bool>() && f["h2"]["epoch"] != epoch;
    }, 90s)) << feed().dump() << logs();
    http::client_request m;
    m.url = record("h2")->openai_url + "/metrics";
    auto metrics = http::call(m);
    ASSERT_TRUE(metrics.ok() && metrics->ok());
    double held = 0;
    for (const auto & s : fleet::parse_prometheus_text(metrics->body))
        if (s.name == "rustycage_kv_tier_blocks") held += s.value;
    EXPECT_EQ(static_cast<double>(g.blocks.blocks("h2")), held) << "what the restarted server's tiers hold, nothing from before";
    std::cout << "[ measure  ] kill -9 of a host's server: untrusted by the gateway after " << untrusted_ms << " ms\n";
}

// Round three: in every kill, the first resume after the gateway had untrusted the host's stream
// went to the dead host by affinity (its lookup refused, 0.75 x affinity still won), then failed
// over. A host whose stream broke earns no affinity credit.
TEST_F(gateway_fleet, a_host_whose_kv_stream_broke_gets_no_request_for_its_cache) {
    const std::string conversation = conversation_on("h1", long_prompt("affinity after a kill"));
    ASSERT_FALSE(conversation.empty()) << "some request went to h1";
    ASSERT_TRUE(poll_until([&] { return gw->context().kv_feed.trusted("h1"); }, 30s));
    const double affinity_before = routed("h1", "affinity");
    const int pid = server_pid("h1");
    ASSERT_GT(pid, 0);
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    ASSERT_TRUE(poll_until([&] { return !gw->context().kv_feed.trusted("h1"); }, 10s));
    auto r = post("/v1/chat/completions", chat_body("tiny", conversation + " and on", 2));
    ASSERT_TRUE(r.ok()) << r.err().message;
    EXPECT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(routed("h1", "affinity"), affinity_before) << "no request went to the dead host for its cache";
}

TEST_F(gateway_fleet, in_the_steady_state_the_gateway_routes_from_its_index_and_asks_no_host) {
    auto & g = gw->context();
    ASSERT_TRUE(poll_until([&] { return g.kv_feed.trusted("h1") && g.kv_feed.trusted("h2") && g.kv_feed.trusted("h3"); }, 30s))
        << g.kv_feed.to_json().dump();
    // h2 alone has run this conversation.
    const std::string prompt = long_prompt("steady");
    ASSERT_NO_FATAL_FAILURE(run_on("h2", prompt));
    ASSERT_TRUE(poll_until([&] { return g.blocks.blocks("h2") > 0; }, 30s));

    // The first explanation starts the vocabulary's fetch; once it is loaded, every candidate's
    // input comes from the index.
    const std::string explain_body = json{{"model", "tiny"}, {"messages", {{{"role", "user"}, {"content", prompt}}}}}.dump();
    json why;
    ASSERT_TRUE(poll_until([&] {
        auto r = post("/v1/kv/lookup", explain_body);
        if (!r.ok() || !r->ok()) return false;
        why = json::parse(r->body);
        return why["inputs"] == "index";
    }, 60s)) << why.dump() << " " << g.vocabs.to_json().dump();
    EXPECT_EQ(why["chosen"], "h2") << why.dump();
    // Each index answer agrees with the host's own lookup, to within the partial block the index
    // does not count (the host may hold the prompt's tail in its context).
    int h2_context = 0;
    for (const auto & c : why["candidates"]) {
        EXPECT_EQ(c["source"], "index") << c.dump();
        http::client_request ask;
        ask.method = "POST";
        ask.url = record(c["id"].get<std::string>())->openai_url + "/v1/kv/lookup";
        ask.headers = {"Content-Type: application/json"};
        ask.body = explain_body;
        auto own = http::call(ask);
        ASSERT_TRUE(own.ok() && own->ok());
        const json a = json::parse(own->body);
        const auto & t = c["lookup"]["tiers"];
        const int index_cached = t["context"].get<int>() + t["host"].get<int>() + t["disk"].get<int>();
        EXPECT_EQ(c["lookup"]["prompt_tokens"], a["prompt_tokens"]) << c.dump() << " vs " << a.dump();
        EXPECT_LE(index_cached, a["cached_tokens"].get<int>()) << c.dump() << " vs " << a.dump();
        EXPECT_GE(index_cached + 64, a["cached_tokens"].get<int>()) << c.dump() << " vs " << a.dump();
        // The context tier too: the host keeps the conversation's sequence, and its stream says so.
        const int context = a["tiers"]["context"].get<int>();
        EXPECT_LE(t["context"].get<int>(), context) << c.dump() << " vs " << a.dump();
        EXPECT_GE(t["context"].get<int>() + 64, context) << c.dump() << " vs " << a.dump();
        if (c["id"] == "h2") h2_context = t["context"].get<int>();
    }
    EXPECT_GT(h2_context, 0) << "h2's context holds the conversation: " << why.dump();

    // Requests now: resumes of the conversation and new ones, and not one lookup sent.
    auto lookups_sent = [&] {
        double n = 0;
        for (const auto & s : fleet::parse_prometheus_text(g.metrics.expose()))
            if (s.name == "rustycage_gateway_lookups_total") n += s.value;
        return n;
    };
    const double lookups_before = lookups_sent();
    auto resumed = post("/v1/chat/completions", chat_body("tiny", prompt, 2));
    ASSERT_TRUE(resumed.ok() && resumed->ok());
    EXPECT_EQ(resumed->header("X-Rustycage-Host"), "h2");
    EXPECT_EQ(resumed->header("X-Rustycage-Route"), "cache_context") << "as a lookup would route it: h2 keeps the conversation in its context";
    // The same conversation through the Responses API: its input is read as the host reads it.
    auto responses = post("/v1/responses", json{{"model", "tiny"}, {"input", prompt}, {"max_output_tokens", 2}}.dump());
    ASSERT_TRUE(responses.ok() && responses->ok()) << (responses.ok() ? responses->body : "");
    EXPECT_EQ(responses->header("X-Rustycage-Host"), "h2");
    EXPECT_EQ(responses->header("X-Rustycage-Route"), "cache_context");
    for (int i = 0; i < 4; ++i) {
        auto r = post("/v1/chat/completions", chat_body("tiny", long_prompt("steady-" + std::to_string(i)), 2));
        ASSERT_TRUE(r.ok() && r->ok());
    }
    EXPECT_EQ(lookups_sent(), lookups_before) << "no host asked in the steady state";
    double from_index = 0;
    for (const auto & s : fleet::parse_prometheus_text(g.metrics.expose()))
        if (s.name == "rustycage_gateway_route_seconds_count" && s.labels.at("inputs") == "index") from_index += s.value;
    EXPECT_GE(from_index, 5);
    // Each of those chats rendered through the vocabulary's render memo: one-message chats share a
    // shape, so all but the first are spliced; none differed from a full render.
    std::map<std::string, double> memo;
    for (const auto & s : fleet::parse_prometheus_text(g.metrics.expose()))
        if (s.name == "rustycage_gateway_render_memo_total") memo[s.labels.at("outcome")] = s.value;
    EXPECT_GE(memo["hit"], 4) << g.vocabs.to_json().dump();
    EXPECT_EQ(memo["mismatch"], 0);
}
