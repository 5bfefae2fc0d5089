// Pure pieces of src/fleet: keys, host records, fingerprints, host state, metrics parsing, triage
// text, rate-limit delays, the etcd gateway's codecs.
#include <gtest/gtest.h>

#include "fake_etcd.h"
#include "fleet/etcd/etcd_gateway.h"
#include "fleet/incidents/fleet_incident.h"
#include "fleet/etcd/fleet_keys.h"
#include "fleet/view/fleet_view.h"
#include "fleet/incidents/github_client.h"
#include "fleet/host/host_record.h"
#include "fleet/host/server_probe.h"
#include "fleet/incidents/triage.h"

#include <cpp-httplib/httplib.h>
#include <map>
#include <thread>

namespace rc::fleet {
namespace {

TEST(etcd_client, a_record_put_until_taken_survives_an_outage_and_gives_up_only_when_stopped) {
    test::fake_etcd etcd;
    etcd.set_down(true);
    int asked = 0;
    auto back_after_three = [&] {
        if (++asked == 3) etcd.set_down(false);
        return false;
    };
    EXPECT_TRUE(fleet::put_until_taken(etcd, "k", "final", back_after_three, std::chrono::milliseconds(1)));
    EXPECT_GE(asked, 3) << "it retried through the outage";
    EXPECT_EQ(etcd.get("k")->kvs.at(0).value, "final");
    etcd.set_down(true);
    EXPECT_FALSE(fleet::put_until_taken(etcd, "k", "later", [] { return true; }, std::chrono::milliseconds(1)));
    etcd.set_down(false);
    EXPECT_EQ(etcd.get("k")->kvs.at(0).value, "final") << "nothing written once stopped";
}

// Round three: `fleet status` showed a host record not on a lease as `up`, where the gateway and
// the agents ignore it (not written by an agent). The picture says it is ignored, and why.
TEST(fleet_view, a_record_not_on_a_lease_is_shown_ignored_not_up) {
    test::fake_etcd etcd;
    fleet_keys keys;
    host_record r;
    r.id = "fake";
    r.openai_url = "http://127.0.0.1:9";
    r.server.ready = true;
    r.server.state = "ready";
    ASSERT_TRUE(etcd.put(keys.host("fake"), to_json(r).dump()).ok());  // no lease
    r.id = "real";
    const int64_t lease = etcd.grant(std::chrono::seconds(60)).value();
    ASSERT_TRUE(etcd.put(keys.host("real"), to_json(r).dump(), lease).ok());
    auto fleet = read_fleet(etcd, keys);
    ASSERT_TRUE(fleet.ok()) << fleet.err().message;
    std::map<std::string, host_view> by_id;
    for (const auto & h : fleet->hosts) by_id[h.id] = h;
    EXPECT_EQ(by_id["fake"].state, "down");
    EXPECT_NE(by_id["fake"].why.find("not on a lease"), std::string::npos) << by_id["fake"].why;
    EXPECT_FALSE(by_id["fake"].record.has_value());
    EXPECT_EQ(by_id["real"].state, "up") << by_id["real"].why;
    EXPECT_TRUE(fleet->alarms.empty());
    etcd.set_alarms({"NOSPACE on member 8e9e05c52164694d"});
    auto alarmed = read_fleet(etcd, keys);
    ASSERT_TRUE(alarmed.ok());
    EXPECT_EQ(alarmed->alarms, std::vector<std::string>{"NOSPACE on member 8e9e05c52164694d"}) << "the picture carries etcd's alarms";
}

TEST(fleet_keys, layout_is_the_documented_one) {
    fleet_keys k;
    EXPECT_EQ(k.host("a"), "fleet/hosts/a");
    EXPECT_EQ(k.roster_entry("a"), "fleet/roster/a");
    // What an agent writes sits under its own id: etcd grants each agent those ranges only.
    EXPECT_EQ(k.health_entry("a", "b"), "fleet/health/b/a") << "b's view of a";
    EXPECT_EQ(k.incident("h1", "inc-1"), "fleet/incidents/h1/inc-1");
    EXPECT_EQ(k.outbox_entry("h1", "inc-1"), "fleet/outbox/h1/inc-1");
    EXPECT_EQ(k.rollout("ro-1"), "fleet/rollouts/ro-1");
    EXPECT_EQ(k.rollout_state("ro-1"), "fleet/rollout-state/ro-1");
    EXPECT_EQ(k.rollout_host("ro-1", "h1"), "fleet/rollout-progress/h1/ro-1");
    EXPECT_EQ(k.issue("fp-1"), "fleet/issues/fp-1");
    EXPECT_EQ(k.triager_election(), "fleet/election/triager");
    EXPECT_EQ(k.schema(), "fleet/schema");
    k.prefix = "lab2/";
    EXPECT_EQ(k.host("a"), "lab2/hosts/a");
    EXPECT_EQ(fleet_keys::tail("fleet/hosts/a", "fleet/hosts/"), "a");
    EXPECT_EQ(fleet_keys::tail("fleet/health/a/b", "fleet/health/"), "");
    EXPECT_EQ(fleet_keys::tail("other/hosts/a", "fleet/hosts/"), "");
    EXPECT_EQ(fleet_keys::pair_under("fleet/health/b/a", "fleet/health/"), std::make_pair(std::string("b"), std::string("a")));
    for (const char * odd : {"fleet/health/b", "fleet/health/b/", "fleet/health//a", "fleet/health/b/a/c", "other/health/b/a"})
        EXPECT_EQ(fleet_keys::pair_under(odd, "fleet/health/").second, "") << odd;
}

TEST(fleet_keys, host_ids_and_prefixes_are_checked) {
    EXPECT_TRUE(valid_host_id("gpu-a.lab_1"));
    for (const char * bad : {"", ".hidden", "-x", "a/b", "a b", "ä"}) EXPECT_FALSE(valid_host_id(bad)) << bad;
    EXPECT_FALSE(valid_host_id(std::string(64, 'a')));
    EXPECT_TRUE(valid_fleet_prefix("fleet/"));
    EXPECT_FALSE(valid_fleet_prefix("fleet"));
    EXPECT_FALSE(valid_fleet_prefix("a b/"));
}

TEST(host_record, round_trips_and_tolerates_unknown_and_missing_fields) {
    host_record r;
    r.id = "gpu-a";
    r.openai_url = "http://10.0.0.5:8080";
    r.version = "0.1.0";
    r.backend = "cpu";
    r.devices = {{"CPU", "Intel", "cpu", 100, 50}};
    r.server.state = "ready";
    r.server.ready = true;
    r.server.pid = 42;
    r.models = {{"demo", "sha256-ab", "ready", true, 1000}, {"bad:latest", "sha256-cd", "failed", false, 10}};
    r.kv.tokens_computed = 30;
    r.kv.tokens_context = 60;
    r.kv.tokens_disk = 10;
    auto j = to_json(r);
    EXPECT_EQ(j["schema"], 1);
    EXPECT_DOUBLE_EQ(j["kv"]["hit_rate"].get<double>(), 0.7);
    j["a_future_field"] = {{"x", 1}};
    auto back = parse_host_record(j.dump());
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back->id, "gpu-a");
    EXPECT_EQ(back->openai_url, r.openai_url);
    EXPECT_EQ(back->server.pid, 42);
    ASSERT_EQ(back->models.size(), 2u);
    EXPECT_EQ(back->models[1].status, "failed");
    EXPECT_TRUE(back->models[0].loaded);
    EXPECT_EQ(back->kv.tokens_disk, 10u);
    EXPECT_EQ(to_json(back.value()).dump(), to_json(r).dump());

    auto minimal = parse_host_record(R"({"id":"x"})");
    ASSERT_TRUE(minimal.ok());
    EXPECT_FALSE(minimal->server.ready);
    EXPECT_FALSE(parse_host_record("[]").ok());
    EXPECT_FALSE(parse_host_record(R"({"id":3})").ok());
    EXPECT_FALSE(parse_host_record("not json").ok());
}

TEST(fingerprint, the_same_fault_has_the_same_fingerprint_whatever_varies) {
    EXPECT_EQ(normalize_error("Failed to open /tmp/rc-123/models/x.gguf: error 12 at 0x7ffd1234"), "failed to open x.gguf: error N at H");
    EXPECT_EQ(normalize_error("signal 11 (Segmentation fault)"), "signal N (segmentation fault)");
    EXPECT_EQ(normalize_error("  many\n\tspaces  "), "many spaces");
    EXPECT_LE(normalize_error(std::string(1000, 'x') + " " + std::string(1000, 'y')).size(), 1000u);
    const auto a = incident_fingerprint("model_load_failed", "cannot read '/home/a/m.gguf' (pid 100)", "sha256-1", "0.1.0");
    const auto b = incident_fingerprint("model_load_failed", "cannot read '/srv/b/m.gguf' (pid 777)", "sha256-1", "0.1.0");
    EXPECT_EQ(a, b);
    EXPECT_EQ(a.size(), 19u);
    EXPECT_TRUE(a.starts_with("fp-"));
    EXPECT_NE(a, incident_fingerprint("server_crash", "cannot read '/home/a/m.gguf' (pid 100)", "sha256-1", "0.1.0"));
    EXPECT_NE(a, incident_fingerprint("model_load_failed", "cannot read '/home/a/m.gguf' (pid 100)", "sha256-2", "0.1.0"));
    EXPECT_NE(a, incident_fingerprint("model_load_failed", "cannot read '/home/a/m.gguf' (pid 100)", "sha256-1", "0.2.0"));
    EXPECT_NE(a, incident_fingerprint("model_load_failed", "cannot parse '/home/a/m.gguf'", "sha256-1", "0.1.0"));
}

TEST(fleet_incident, local_records_become_fleet_incidents) {
    store::incident local{"inc-20260101T000000Z-00000001", std::chrono::system_clock::now(), "quarantine_failed", "bad:latest",
                          "NaN in tensor 'blk.0.attn_q.weight'", {{"source", "file"}, {"layers", {"sha256-abc"}}}};
    auto i = from_local(local, "gpu-a", {{"rustycage", "0.1.0"}}, {{"backend", "cpu"}});
    EXPECT_EQ(i.host, "gpu-a");
    EXPECT_EQ(i.digest, "sha256-abc");
    EXPECT_EQ(i.fingerprint, incident_fingerprint("quarantine_failed", local.reason, "sha256-abc", "0.1.0"));
    EXPECT_EQ(i.versions["rustycage"], "0.1.0");
    auto back = parse_fleet_incident(to_json(i).dump());
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(to_json(back.value()), to_json(i));
    EXPECT_FALSE(parse_fleet_incident(R"({"id":"x"})").ok());
}

TEST(fleet_view, host_state_is_derived_from_record_and_peers) {
    std::string why;
    EXPECT_EQ(derive_host_state(std::nullopt, {}, why), "down");
    host_record r;
    r.id = "a";
    r.server.state = "crash_loop";
    r.server.last_exit = "exit status 1";
    EXPECT_EQ(derive_host_state(r, {}, why), "degraded");
    EXPECT_NE(why.find("crash_loop"), std::string::npos);
    r.server.state = "ready";
    r.server.ready = true;
    EXPECT_EQ(derive_host_state(r, {}, why), "up");
    EXPECT_EQ(derive_host_state(r, {{"b", "up", "", "", true}}, why), "up");
    EXPECT_EQ(derive_host_state(r, {{"b", "degraded", "timed out", "", false}}, why), "degraded");
    EXPECT_NE(why.find("b cannot use it: timed out"), std::string::npos);
    EXPECT_EQ(derive_host_state(r, {{"b", "down", "", "", false}}, why), "up") << "a stale 'down' from before it came back";
    // No record, but a peer reaches its server: its agent is cut off from etcd, the host is not gone.
    EXPECT_EQ(derive_host_state(std::nullopt, {{"b", "unreachable", "", "", true}}, why), "unreachable");
    EXPECT_NE(why.find("b reaches its server"), std::string::npos) << why;
    EXPECT_EQ(derive_host_state(std::nullopt, {{"b", "down", "", "", false}}, why), "down");
    EXPECT_EQ(derive_host_state(r, {{"b", "unreachable", "", "", true}}, why), "up") << "registered again: the record decides";
}

TEST(server_probe, prometheus_text_is_parsed) {
    const std::string text =
        "# HELP rustycage_requests_total x\n# TYPE rustycage_requests_total counter\n"
        "rustycage_requests_total{route=\"/v1/chat/completions\",method=\"POST\",status=\"500\"} 7\n"
        "rustycage_requests_total{route=\"/v1/models\",method=\"GET\",status=\"200\"} 3\n"
        "rustycage_kv_prompt_tokens_total{model=\"a \\\"q\\\"\",source=\"disk\"} 12\n"
        "rustycage_models_loaded 1\n";
    auto s = parse_prometheus_text(text);
    ASSERT_EQ(s.size(), 4u);
    EXPECT_EQ(s[0].labels["status"], "500");
    EXPECT_DOUBLE_EQ(s[0].value, 7);
    EXPECT_EQ(s[2].labels["model"], "a \"q\"");
    EXPECT_EQ(s[3].name, "rustycage_models_loaded");
    EXPECT_TRUE(s[3].labels.empty());
}

TEST(triage, text_from_a_model_is_made_safe_for_a_public_issue) {
    EXPECT_EQ(sanitize_text("hi @team\n\x01\tthere", 100), "hi (at)team there");
    EXPECT_EQ(sanitize_text("abc", 2), "ab");
    EXPECT_EQ(sanitize_text("a\xc3\xa9", 2), "a") << "never cut inside a UTF-8 sequence";
    auto schema = triage_schema();
    EXPECT_EQ(schema["required"].size(), 4u) << "no title: titles come from the rules";
    EXPECT_EQ(schema["properties"]["severity"]["enum"].size(), 4u);
    EXPECT_FALSE(schema["additionalProperties"].get<bool>());
}

TEST(triage, rules_say_they_are_rules_and_why) {
    fleet_incident i;
    i.host = "gpu-a";
    i.kind = "crash_loop";
    i.reason = "the server exits before it is ready (exit status 1)";
    auto t = rule_triage(i, "no healthy host serves the triage model `x`.");
    EXPECT_EQ(t.source, "rules");
    EXPECT_EQ(t.severity, "critical");
    EXPECT_EQ(t.component, "server");
    EXPECT_NE(t.title.find("gpu-a"), std::string::npos);
    EXPECT_NE(t.note.find("triage model"), std::string::npos);
    auto back = parse_triage(to_json(t));
    EXPECT_EQ(back.title, t.title);
    EXPECT_EQ(back.note, t.note);
}

TEST(github, rate_limit_delays_follow_the_headers) {
    const auto now = std::chrono::system_clock::time_point(std::chrono::seconds(1000));
    EXPECT_EQ(github_retry_after("7", "", "", now).count(), 7);
    EXPECT_EQ(github_retry_after("", "1030", "0", now).count(), 30);
    EXPECT_EQ(github_retry_after("", "900", "0", now).count(), 1) << "a reset in the past waits a second";
    EXPECT_EQ(github_retry_after("", "1030", "12", now).count(), 0) << "requests left: not limited";
    EXPECT_EQ(github_retry_after("soon", "", "", now).count(), 0);
    EXPECT_TRUE(valid_github_repo("acme/lab-fleet.issues"));
    EXPECT_FALSE(valid_github_repo("acme"));
    EXPECT_FALSE(valid_github_repo("a/b/c"));
    EXPECT_FALSE(valid_github_repo("-x/y"));
}

TEST(etcd_gateway, plain_http_off_loopback_needs_the_insecure_flag) {
    etcd_options o;
    o.endpoints = {"http://127.0.0.1:2379", "http://localhost:2379", "http://[::1]:2379", "https://10.0.0.5:2379"};
    EXPECT_TRUE(check_etcd_security(o).ok());
    o.endpoints.push_back("http://10.0.0.6:2379");
    auto refused = check_etcd_security(o);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.err().message.find("http://10.0.0.6:2379"), std::string::npos);
    EXPECT_NE(refused.err().message.find("--etcd-insecure"), std::string::npos);
    EXPECT_EQ(refused.err().message.find('\n'), std::string::npos) << "one line";
    o.allow_insecure = true;
    EXPECT_TRUE(check_etcd_security(o).ok());
    o.cert_file = "/x.pem";
    EXPECT_FALSE(check_etcd_security(o).ok()) << "a certificate without its key";
    EXPECT_FALSE(is_loopback_url("http://127.0.0.1.evil.example:2379"));
}

// Round three: without auth a leased fake host still got chats and keys, and nothing said the fleet
// was open. The agent and the gateway warn at start when etcd is on the network without auth.
TEST(etcd_gateway, auth_off_on_the_network_is_recognised_for_the_start_warning) {
    etcd_options o;
    o.endpoints = {"http://127.0.0.1:2379", "http://[::1]:2379"};
    EXPECT_FALSE(fleet_auth_off_on_network(o)) << "loopback only: a one-machine lab";
    o.endpoints.push_back("https://10.0.0.5:2379");
    EXPECT_TRUE(fleet_auth_off_on_network(o)) << "TLS without a client certificate or a user is no authentication";
    o.user = "agent-a";
    EXPECT_FALSE(fleet_auth_off_on_network(o));
    o.user.clear();
    o.cert_file = "/etc/rustycage/agent.pem";
    EXPECT_FALSE(fleet_auth_off_on_network(o));
}

TEST(etcd_gateway, codecs_and_endpoints) {
    std::string all;
    for (int c = 0; c < 256; ++c) all += char(c);
    for (size_t n = 0; n < 8; ++n) {
        const std::string s = all.substr(0, 250 + n);
        EXPECT_EQ(etcd_base64_decode(etcd_base64_encode(s)).value_or("?"), s);
    }
    EXPECT_EQ(etcd_base64_encode("foo"), "Zm9v");
    EXPECT_FALSE(etcd_base64_decode("abc").has_value());
    EXPECT_EQ(etcd_prefix_end("fleet/"), "fleet0");
    EXPECT_EQ(etcd_prefix_end(std::string("a\xff", 2)), "b");
    auto eps = parse_etcd_endpoints(" http://127.0.0.1:2379/, http://[::1]:2380 ,");
    ASSERT_TRUE(eps.ok());
    EXPECT_EQ(eps.value(), (std::vector<std::string>{"http://127.0.0.1:2379", "http://[::1]:2380"}));
    EXPECT_FALSE(parse_etcd_endpoints("").ok());
    EXPECT_FALSE(parse_etcd_endpoints("127.0.0.1:2379").ok());
    EXPECT_FALSE(parse_etcd_endpoints("http://a:2379/v3").ok());
}

TEST(etcd_gateway, unreachable_members_are_unavailable_quickly) {
    etcd_options o;
    o.endpoints = {"http://127.0.0.1:1", "http://127.0.0.1:2"};
    etcd_gateway g(o);
    const auto t0 = std::chrono::steady_clock::now();
    auto r = g.put("k", "v");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.err().code, errc::unavailable);
    EXPECT_NE(r.err().message.find("no etcd member answered"), std::string::npos) << r.err().message;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

}  // namespace

namespace {

// An OpenAI endpoint that answers every chat completion with `answer` as the message content.
struct canned_model {
    httplib::Server server;
    std::thread thread;
    int port = 0;
    explicit canned_model(std::string answer) {
        server.Post("/v1/chat/completions", [answer](const httplib::Request &, httplib::Response & res) {
            res.set_content(nlohmann::json{{"choices", {{{"message", {{"role", "assistant"}, {"content", answer}}}}}}}.dump(), "application/json");
        });
        port = server.bind_to_any_port("127.0.0.1");
        thread = std::thread([this] { server.listen_after_bind(); });
        server.wait_until_ready();
    }
    ~canned_model() {
        server.stop();
        thread.join();
    }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }
};

}  // namespace

TEST(triage, a_model_adds_to_the_body_and_never_titles_or_reclassifies_what_a_rule_knows) {
    // What a model with random weights answered for a port conflict (issue 32): gibberish, and "kv".
    const std::string gibberish = nlohmann::json{{"severity", "low"}, {"component", "kv"},
                                                 {"summary", "zx\u202eqq\nvortal\u200b blocks @here"},
                                                 {"suggested_action", "frobnicate\tthe\r\ncache"}}.dump();
    canned_model m(gibberish);
    fleet_incident i;
    i.host = "gpu-a";
    i.kind = "crash_loop";
    i.reason = "bind 0.0.0.0:8080: Address already in use\nthen more lines";
    auto t = model_triage(i, m.url(), "tiny", "gpu-b", std::chrono::seconds(5));
    ASSERT_TRUE(t.ok()) << t.err().message;
    EXPECT_EQ(t->source, "model");
    EXPECT_EQ(t->title, "Server crash loop on gpu-a: bind 0.0.0.0:8080: Address already in use") << "the rule's title, the first error line";
    EXPECT_EQ(t->component, "server") << "a rule's classification is never overridden";
    EXPECT_EQ(t->severity, "critical");
    EXPECT_EQ(t->summary, "zxqq vortal blocks (at)here") << "one line, printable, no bidi or zero-width controls, no mentions";
    EXPECT_EQ(t->suggested_action, "frobnicate the cache");
    // A kind no rule knows: the model's classification is the best there is.
    i.kind = "something_new";
    auto u = model_triage(i, m.url(), "tiny", "gpu-b", std::chrono::seconds(5));
    ASSERT_TRUE(u.ok()) << u.err().message;
    EXPECT_EQ(u->component, "kv");
    EXPECT_EQ(u->severity, "low");
    EXPECT_EQ(u->title.rfind("something_new on gpu-a", 0), 0u) << u->title;
}

}  // namespace rc::fleet
