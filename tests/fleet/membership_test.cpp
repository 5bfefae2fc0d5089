// peer_monitor against the in-memory etcd (whose watch is unmodelled, so run_watch re-reads the host
// prefix every 200 ms) and a stand-in peer server: what a peer whose lease lapsed looks like while its
// server is silent, and when it answers again before its agent registers. Each probe_once() call is
// one probe round, as the agent makes one per --probe-interval.
#include <gtest/gtest.h>

#include <cpp-httplib/httplib.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <thread>

#include "fake_etcd.h"
#include "fleet/host/membership.h"
#include "support/loopback_server.h"
#include "support/poll.h"
#include "support/port.h"

namespace rc::fleet {
namespace {

using namespace std::chrono_literals;
using test::poll_until;

// The agent "a" watching its one peer "b", registered on its own lease at `port`; stop() ends the watch.
class lapsed_peer : public ::testing::Test {
  protected:
    void SetUp() override {
        own_lease = etcd.grant(60s).value();
        peer_lease = etcd.grant(60s).value();
        host_record r;
        r.id = "b";
        r.openai_url = "http://127.0.0.1:" + std::to_string(port);
        r.server.ready = true;
        ASSERT_TRUE(etcd.put(keys.host("b"), to_json(r).dump(), peer_lease).ok());
        watch = std::thread([this] { monitor.run_watch([this] { return stopping.load(); }); });
        ASSERT_TRUE(poll_until([&] { return peer().registered; }, 10s));
    }
    void TearDown() override {
        stopping = true;
        if (watch.joinable()) watch.join();
    }
    peer_info peer() const {
        for (const auto & p : monitor.peers())
            if (p.id == "b") return p;
        return {};
    }
    // b's agent is cut off: its lease expires, its record goes, the watch sees it lapse.
    void lapse() {
        etcd.expire(peer_lease);
        ASSERT_TRUE(poll_until([&] { auto p = peer(); return !p.registered && p.lapsed; }, 10s));
    }
    // What "a" published about "b".
    std::string published_state() {
        auto v = etcd.value(keys.health_entry("b", "a"));
        return v ? nlohmann::json::parse(*v).value("state", "") : "";
    }

    test::fake_etcd etcd;
    fleet_keys keys;
    const int port = test::free_port();
    int64_t own_lease = 0, peer_lease = 0;
    peer_monitor monitor{etcd, keys, "a", 500ms, [this] { return own_lease; }};
    std::atomic<bool> stopping{false};
    std::thread watch;
};

// A stand-in for b's server on `port`: /v1/health/ready answers `status`, and counts the probes.
struct peer_server {
    explicit peer_server(int port) {
        server.http.Get("/v1/health/ready", [this](const httplib::Request &, httplib::Response & r) {
            ++probes;
            r.status = status.load();
            r.set_content(r.status == 200 ? R"({"status":"ready"})" : R"({"message":"loading"})", "application/json");
        });
        bound = server.start(port);
    }
    std::atomic<int> status{200};
    std::atomic<int> probes{0};
    test::loopback_server server;  // after what its handler reads: stopped before they go
    bool bound = false;
};

// The NOSPACE case: b's lease lapsed while its server was down (restarting), then its server answers
// but its agent still cannot register. Peers must see it serving (`unreachable`), not `down` until
// it registers — and with the backoff at its start, within 2 probe rounds of the server answering.
TEST_F(lapsed_peer, a_server_that_answers_again_is_seen_unreachable_without_registering) {
    ASSERT_NO_FATAL_FAILURE(lapse());
    monitor.probe_once();  // nothing listens at b's address
    EXPECT_EQ(peer().state, "down");
    EXPECT_EQ(published_state(), "down");

    peer_server server(port);
    ASSERT_TRUE(server.bound) << "port " << port;
    int rounds = 0;
    ASSERT_TRUE(poll_until([&] {
        if (rounds < 50) {
            ++rounds;
            monitor.probe_once();
        }
        return peer().state == "unreachable";
    }, 10s)) << "a lapsed peer is probed until it answers, not once";
    EXPECT_LE(rounds, 2) << "seen within 2 probe rounds while the backoff is at its start";
    EXPECT_EQ(published_state(), "unreachable");
    EXPECT_FALSE(peer().registered) << "it never registered again";
}

// A lapsed peer whose server stays silent is probed after 1, 2, 4 and then every 8 rounds — not
// every round, not never — and seen within the cap once it answers; an answer resets the backoff.
TEST_F(lapsed_peer, a_silent_server_is_probed_with_backoff_up_to_eight_rounds) {
    peer_server server(port);
    ASSERT_TRUE(server.bound) << "port " << port;
    server.status = 503;  // reachable, not ready: down, like a server that is not there
    ASSERT_NO_FATAL_FAILURE(lapse());

    for (int round = 0; round < 24; ++round) monitor.probe_once();
    EXPECT_EQ(server.probes.load(), 6) << "probed in rounds 0, 1, 3, 7, 15 and 23";
    EXPECT_EQ(peer().state, "down");

    server.status = 200;
    int rounds = 0;
    while (peer().state != "unreachable" && rounds < 20) {
        ++rounds;
        monitor.probe_once();
    }
    EXPECT_EQ(peer().state, "unreachable");
    EXPECT_LE(rounds, k_lapsed_backoff_max_rounds) << "within the cap once the backoff has grown";

    // Serving again: every round probes, so a server that stops is seen down at the next one.
    server.status = 503;
    monitor.probe_once();
    EXPECT_EQ(peer().state, "down");
}

// A peer that registers again is probed as a registered peer; its next lapse starts the backoff afresh.
TEST_F(lapsed_peer, registering_again_ends_the_lapse_and_its_backoff) {
    peer_server server(port);
    ASSERT_TRUE(server.bound) << "port " << port;
    server.status = 503;
    ASSERT_NO_FATAL_FAILURE(lapse());
    for (int round = 0; round < 8; ++round) monitor.probe_once();  // backoff grown to 8 rounds

    peer_lease = etcd.grant(60s).value();
    host_record r;
    r.id = "b";
    r.openai_url = "http://127.0.0.1:" + std::to_string(port);
    ASSERT_TRUE(etcd.put(keys.host("b"), to_json(r).dump(), peer_lease).ok());
    ASSERT_TRUE(poll_until([&] { return peer().registered; }, 10s));
    ASSERT_NO_FATAL_FAILURE(lapse());
    const int before = server.probes.load();
    monitor.probe_once();
    monitor.probe_once();
    EXPECT_EQ(server.probes.load() - before, 2) << "a new lapse probes at once and then after one round";
}

}  // namespace
}  // namespace rc::fleet
