// Partial failures a lab network produces, on a real 3-member etcd with real agents, real servers
// and the gateway in process (docs/FLEET.md "Failure modes"): a hung (SIGSTOPped) etcd member, a
// duplicate --host-id, an agent cut off from etcd while its server serves, an agent killed -9 with
// streams in flight. Heartbeats are 2 s (agent_process.h), so "TTL + 3 s" is a 5 s bound.
#include <signal.h>

#include <atomic>
#include <sstream>
#include <thread>

#include "fleet_test_fixture.h"
#include "gateway/gateway_server.h"

namespace rc::test {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
using steady = std::chrono::steady_clock;

long long ms_since(steady::time_point t0) { return std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t0).count(); }

class fleet_faults : public fleet_fixture {
  protected:
    void TearDown() override {
        if (gw) gw->stop();
        if (cluster)
            for (size_t i = 0; i < cluster->size(); ++i) cluster->thaw_member(i);
    }
    // The gateway in process, with its own etcd client over every member (member 0 first, as agents have it).
    void start_gateway() {
        gw_etcd = std::make_unique<fleet::etcd_gateway>(as("viewer"));
        gw = std::make_unique<gateway::gateway_server>(*gw_etcd, keys, gateway::gateway_options{}, 30s);
        gateway::gateway_listen listen;
        listen.openai_port = 0;
        listen.ollama_port = 0;
        ASSERT_TRUE(gw->start(listen).ok());
        base = "http://127.0.0.1:" + std::to_string(gw->openai_port());
    }
    std::string gw_state(const std::string & id) { return gw->context().hosts.state_of(id); }
    // The test's own reads go to the members that are not frozen.
    void read_from(std::vector<std::string> endpoints) {
        fleet::etcd_options o = as("root");
        o.endpoints = std::move(endpoints);
        etcd = std::make_unique<fleet::etcd_gateway>(o);
    }
    result<http::client_reply> chat(const std::string & url, const std::string & model, int max_tokens = 2) {
        http::client_request r;
        r.method = "POST";
        r.url = url + "/v1/chat/completions";
        r.headers = {"Content-Type: application/json"};
        r.body = json{{"model", model}, {"messages", {{{"role", "user"}, {"content", "hello"}}}}, {"max_tokens", max_tokens}}.dump();
        r.timeout = 60s;
        return http::call(r);
    }

    std::unique_ptr<fleet::etcd_gateway> gw_etcd;
    std::unique_ptr<gateway::gateway_server> gw;
    std::string base;
};

TEST_F(fleet_faults, a_frozen_etcd_member_does_not_freeze_membership) {
    REQUIRE_ETCD();
    ASSERT_NO_FATAL_FAILURE(start_cluster(3));
    for (const char * id : {"a", "b"}) add_agent(id);
    ASSERT_TRUE(poll_until([&] { return ready("a") && ready("b"); }, 120s)) << logs();
    start_gateway();
    ASSERT_TRUE(poll_until([&] { return gw_state("a") == "up" && gw_state("b") == "up" && health("b", "a") == "up"; }, 30s)) << logs();
    const int64_t lease_a = etcd->get(keys.host("a"))->kvs.at(0).lease;

    // Member 0 — the one every watch and stream started on — hangs: connections are accepted, nothing is answered.
    cluster->freeze_member(0);
    read_from({cluster->endpoint(1), cluster->endpoint(2)});
    std::this_thread::sleep_for(3s);  // the freeze has to outlast the watches' idle check for this test to mean anything

    // b dies (agent and server): the gateway and a see it within TTL + 3 s.
    const auto t0 = steady::now();
    agents[1]->kill_agent(record("b")->server.pid);
    ASSERT_TRUE(poll_until([&] { return gw_state("b") == "down" && health("b", "a") == "down"; }, 30s))
        << gw->context().hosts.to_json().dump() << logs();
    const long long left = ms_since(t0);
    EXPECT_LE(left, 5000) << "a host that left during the freeze was seen after " << left << " ms";

    // c joins during the freeze: seen as up by the gateway and by a within TTL + 3 s of its registration.
    add_agent("c");
    ASSERT_TRUE(poll_until([&] { return ready("c"); }, 120s)) << logs();
    const auto t1 = steady::now();
    ASSERT_TRUE(poll_until([&] { return gw_state("c") == "up" && health("c", "a") == "up"; }, 30s)) << logs();
    const long long joined = ms_since(t1);
    EXPECT_LE(joined, 5000) << "a host that joined during the freeze was seen after " << joined << " ms";
    std::cout << "[ measure  ] member frozen: a host that left seen after " << left << " ms, one that joined after " << joined
              << " ms (TTL 2 s)\n";

    // a's lease lived through the freeze: its keepalives moved to another member in time.
    EXPECT_EQ(etcd->get(keys.host("a"))->kvs.at(0).lease, lease_a) << logs();
    EXPECT_EQ(agents[0]->log().find("event=lease_lost"), std::string::npos) << logs();
    cluster->thaw_member(0);
    EXPECT_TRUE(incidents_json(cluster->endpoint(1), true).empty()) << "a hung member is no incident";
}

TEST_F(fleet_faults, a_duplicate_host_id_is_refused_or_waits_with_takeover) {
    REQUIRE_ETCD();
    ASSERT_NO_FATAL_FAILURE(start_cluster(3, {"dup"}));
    add_agent("dup");
    ASSERT_TRUE(poll_until([&] { return ready("dup"); }, 120s)) << logs();
    const auto first = record("dup").value();

    // A second agent with the same id, elsewhere (its own data dir): refuses to start, naming the first.
    temp_dir other("agents-2");
    agent_process second(other.path(), agent_config{"dup", cluster->endpoints(), creds("dup"), {}});
    ASSERT_TRUE(poll_until([&] { return !second.running(); }, 30s)) << second.log();
    EXPECT_NE(second.exit_code(), 0);
    const std::string said = second.log();
    EXPECT_EQ(said.find("event=server_started"), std::string::npos) << "it started nothing";
    EXPECT_NE(said.find("host id 'dup' is held by the agent at " + first.openai_url), std::string::npos) << said;
    EXPECT_NE(said.find("pid " + std::to_string(first.agent_pid)), std::string::npos) << said;
    EXPECT_EQ(record("dup")->agent_pid, first.agent_pid) << "the first keeps its record";
    EXPECT_EQ(record("dup")->openai_url, first.openai_url);

    // With --takeover it waits, serving nothing to the fleet, until the first leaves; then it is the host.
    temp_dir third_root("agents-3");
    agent_process third(third_root.path(), agent_config{"dup", cluster->endpoints(), with_creds("dup", {"--takeover"}), {}});
    ASSERT_TRUE(poll_until([&] { return third.log().find("event=waiting_for_host_id") != std::string::npos; }, 30s)) << third.log();
    EXPECT_EQ(record("dup")->agent_pid, first.agent_pid);
    EXPECT_EQ(agents[0]->stop(), 0);
    ASSERT_TRUE(poll_until([&] { auto r = record("dup"); return r && r->agent_pid == third.pid() && r->server.ready; }, 120s)) << third.log();
    auto roster = json::parse(etcd->get(keys.roster_entry("dup"))->kvs.at(0).value);
    EXPECT_EQ(roster["left_at"], "") << "the roster follows the agent that holds the id now";
    EXPECT_EQ(state_in_status("dup"), "up");

    // A restarted agent takes its own id back at once, without --takeover: its data dir holds the
    // lease, which it revokes. (An agent without that lease is refused while it lives, as above.)
    const int64_t lease = etcd->get(keys.host("dup"))->kvs.at(0).lease;
    third.kill_agent(record("dup")->server.pid);
    const size_t said_before = third.log().size();
    const auto t0 = steady::now();
    agent_process restarted(third_root.path(), agent_config{"dup", cluster->endpoints(), creds("dup"), {}});
    ASSERT_TRUE(poll_until([&] { auto r = etcd->get(keys.host("dup")); return r.ok() && !r->kvs.empty() && r->kvs[0].lease != lease; }, 60s))
        << restarted.log();
    EXPECT_LT(ms_since(t0), 2000 + 10000) << "no wait for the old lease to lapse beyond the agent's start";
    const std::string said_now = restarted.log().substr(said_before);
    EXPECT_EQ(said_now.find("is held"), std::string::npos) << said_now;
    EXPECT_EQ(said_now.find("waiting_for_host_id"), std::string::npos) << said_now;
    EXPECT_TRUE(restarted.running()) << said_now;
}

TEST_F(fleet_faults, an_agent_cut_off_from_etcd_is_unreachable_and_still_routed) {
    REQUIRE_ETCD();
    ASSERT_NO_FATAL_FAILURE(start_cluster(3, {"a", "b"}));
    // b alone serves "solo": a request for it can only succeed on b.
    std::filesystem::create_directories(root.path() / "b" / "models");
    std::filesystem::create_symlink(std::string(RC_TEST_MODELS_DIR) + "/tiny-chat.gguf", root.path() / "b" / "models" / "solo.gguf");
    for (const char * id : {"a", "b"}) add_agent(id);
    ASSERT_TRUE(poll_until([&] { return ready("a") && ready("b"); }, 120s)) << logs();
    start_gateway();
    ASSERT_TRUE(poll_until([&] { return gw_state("b") == "up"; }, 30s));
    ASSERT_TRUE(chat(base, "solo").ok());

    // b's agent is silenced for 30 s (frozen: to etcd the same as a cut network); its server serves on.
    std::atomic<bool> done{false};
    std::atomic<int> sent{0}, failed{0};
    std::string first_failure;
    std::thread client([&] {
        while (!done) {
            auto r = chat(base, "solo");
            ++sent;
            if (!r.ok() || r->status != 200) {
                if (failed++ == 0) first_failure = r.ok() ? std::to_string(r->status) + " " + r->body : r.err().message;
            }
            std::this_thread::sleep_for(100ms);
        }
    });
    ASSERT_EQ(::kill(agents[1]->pid(), SIGSTOP), 0);
    const auto frozen_at = steady::now();
    const bool lapsed = poll_until([&] { return etcd->get(keys.host("b"))->kvs.empty(); }, 20s);
    const bool unreachable = lapsed && poll_until([&] { return gw_state("b") == "unreachable" && health("b", "a") == "unreachable"; }, 10s);
    const std::string status_state = unreachable ? state_in_status("b") : "";
    std::this_thread::sleep_until(frozen_at + 30s);
    const std::string still = gw_state("b");
    ::kill(agents[1]->pid(), SIGCONT);
    // Back: it registers again and is up.
    const bool back = poll_until([&] { return ready("b") && gw_state("b") == "up" && health("b", "a") == "up"; }, 30s);
    done = true;
    client.join();
    ASSERT_TRUE(lapsed) << "b's lease lapsed while its agent was silent";
    ASSERT_TRUE(unreachable) << gw->context().hosts.to_json().dump() << logs();
    EXPECT_EQ(status_state, "unreachable") << "fleet status says why, not down";
    EXPECT_EQ(still, "unreachable");
    EXPECT_TRUE(back) << logs();
    EXPECT_EQ(failed.load(), 0) << failed << " of " << sent << " requests failed; the first: " << first_failure;
    EXPECT_GT(sent.load(), 50);
    EXPECT_TRUE(incidents_json(cluster->endpoints(), true).empty()) << "a cut-off agent is no crash";
    std::cout << "[ measure  ] agent silent 30 s: " << sent << " requests for its only model, " << failed << " failed\n";
}

TEST_F(fleet_faults, kill_9_of_an_agent_drains_its_server_instead_of_cutting_streams) {
    REQUIRE_ETCD();
    ASSERT_NO_FATAL_FAILURE(start_cluster(3, {"a"}));
    add_agent("a", {"--shutdown-timeout", "60", "--parallel", "4", "--ctx-size", "2048"});
    ASSERT_TRUE(poll_until([&] { return ready("a"); }, 120s)) << logs();
    const auto rec = record("a").value();

    // Four long streams, all decoding, then kill -9 of the agent.
    struct stream_result {
        std::string body;
        long status = 0;
        std::string error;
    };
    std::vector<stream_result> results(4);
    std::atomic<int> started{0};
    std::vector<std::thread> clients;
    for (int i = 0; i < 4; ++i)
        clients.emplace_back([&, i] {
            http::client_request r;
            r.method = "POST";
            r.url = rec.openai_url + "/v1/chat/completions";
            r.headers = {"Content-Type: application/json"};
            r.body = json{{"model", "tiny"}, {"messages", {{{"role", "user"}, {"content", "stream " + std::to_string(i)}}}}, {"max_tokens", 400},
                          {"stream", true}}
                         .dump();
            r.timeout = 120s;
            bool counted = false;
            auto reply = http::stream(r, [&](std::string_view d) {
                if (!counted) {
                    counted = true;
                    ++started;
                }
                results[i].body.append(d);
                return true;
            }, [] { return false; });
            if (reply.ok()) results[i].status = reply->status;
            else results[i].error = reply.err().message;
        });
    const bool streaming = poll_until([&] { return started.load() >= 4; }, 30s);
    agents[0]->kill_agent();
    for (auto & t : clients) t.join();
    ASSERT_TRUE(streaming);
    // An error event is a chunk with a top-level "error" key; the gibberish text itself may say "error".
    auto has_error_event = [](const std::string & body) {
        std::istringstream lines(body);
        for (std::string line; std::getline(lines, line);) {
            if (line.rfind("data: {", 0) != 0) continue;
            const json ev = json::parse(line.substr(6), nullptr, false);
            if (ev.is_discarded() || ev.contains("error")) return true;
        }
        return false;
    };
    int complete = 0;
    for (const auto & r : results) {
        const bool ok = r.status == 200 && r.body.find("data: [DONE]") != std::string::npos && r.body.find("\"finish_reason\":\"") != std::string::npos &&
                        !has_error_event(r.body);
        complete += ok;
        EXPECT_TRUE(ok) << "status " << r.status << " " << r.error << "\n" << r.body.substr(r.body.size() > 600 ? r.body.size() - 600 : 0);
    }
    std::cout << "[ measure  ] kill -9 of the agent with 4 streams in flight: " << complete << " of 4 complete\n";
    // Then the drained server exits and takes no new requests.
    EXPECT_TRUE(poll_until([&] { return ::kill(rec.server.pid, 0) != 0; }, 30s)) << "the server exits once drained";
}

}  // namespace
}  // namespace rc::test
