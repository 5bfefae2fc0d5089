// etcd_gateway against real etcd members (the Debian etcd-server binary): KV, transactions, leases
// and their expiry, watch, elections, and failover when a member dies.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <thread>

#include "etcd_cluster.h"
#include "fleet/etcd/etcd_gateway.h"
#include "http/http_client.h"

namespace rc::fleet {
namespace {

using namespace std::chrono_literals;
using test::etcd_cluster;
using test::poll_until;

#define REQUIRE_ETCD() \
    if (!etcd_cluster::available()) GTEST_SKIP() << "no etcd binary: scripts/setup.sh installs etcd-server"

etcd_gateway gateway(const std::vector<std::string> & endpoints) {
    etcd_options o;
    o.endpoints = endpoints;
    return etcd_gateway(o);
}

TEST(etcd_real, kv_and_transactions) {
    REQUIRE_ETCD();
    etcd_cluster c(1);
    ASSERT_TRUE(c.wait_healthy());
    auto g = gateway(c.endpoint_list());
    ASSERT_TRUE(g.put("fleet/hosts/a", std::string("v\0\xff", 3)).ok());
    ASSERT_TRUE(g.put("fleet/hosts/b", "2").ok());
    ASSERT_TRUE(g.put("fleet/hostsx", "not under the prefix").ok());
    auto one = g.get("fleet/hosts/a");
    ASSERT_TRUE(one.ok());
    ASSERT_EQ(one->kvs.size(), 1u);
    EXPECT_EQ(one->kvs[0].value, std::string("v\0\xff", 3)) << "binary values survive base64";
    auto all = g.get_prefix("fleet/hosts/");
    ASSERT_TRUE(all.ok());
    ASSERT_EQ(all->kvs.size(), 2u);
    EXPECT_EQ(all->kvs[1].key, "fleet/hosts/b");
    EXPECT_GT(all->revision, 0);
    EXPECT_TRUE(g.get("nothing")->kvs.empty());

    // Create-only, then compare-and-swap on mod_revision.
    auto t1 = g.txn({etcd_compare::absent("k")}, {etcd_op::put("k", "1"), etcd_op::get("fleet/hosts/a")});
    ASSERT_TRUE(t1.ok());
    EXPECT_TRUE(t1->succeeded);
    ASSERT_EQ(t1->ranges.size(), 1u);
    EXPECT_EQ(t1->ranges[0].kvs.size(), 1u);
    auto t2 = g.txn({etcd_compare::absent("k")}, {etcd_op::put("k", "2")}, {etcd_op::get("k")});
    ASSERT_TRUE(t2.ok());
    EXPECT_FALSE(t2->succeeded);
    ASSERT_EQ(t2->ranges.size(), 1u);
    EXPECT_EQ(t2->ranges[0].kvs[0].value, "1");
    const int64_t rev = t2->ranges[0].kvs[0].mod_revision;
    EXPECT_TRUE(g.txn({etcd_compare::mod_revision_is("k", rev)}, {etcd_op::put("k", "3")})->succeeded);
    EXPECT_FALSE(g.txn({etcd_compare::mod_revision_is("k", rev)}, {etcd_op::put("k", "4")})->succeeded) << "a stale revision";
    EXPECT_TRUE(g.txn({etcd_compare::value_is("k", "3")}, {etcd_op::del("k")})->succeeded);
    EXPECT_TRUE(g.get("k")->kvs.empty());
    EXPECT_EQ(g.del("fleet/hosts/", true).value(), 2);
}

// Round three: during a NOSPACE alarm the agent logged "etcd_unreachable" without etcd's words and
// `fleet status` said nothing of the alarm. alarms() reads them; a refused write carries etcd's error.
TEST(etcd_real, an_active_alarm_is_read_and_a_refused_write_says_why) {
    REQUIRE_ETCD();
    etcd_cluster c(1);
    ASSERT_TRUE(c.wait_healthy());
    auto g = gateway(c.endpoint_list());
    auto none = g.alarms();
    ASSERT_TRUE(none.ok()) << none.err().message;
    EXPECT_TRUE(none->empty());
    // Raise NOSPACE by hand (what a full backend does), on the member that answers.
    auto post = [&](const std::string & path, const nlohmann::json & body) {
        http::client_request r;
        r.method = "POST";
        r.url = c.endpoint_list()[0] + "/v3/" + path;
        r.headers = {"Content-Type: application/json"};
        r.body = body.dump();
        auto reply = http::call(r);
        return reply.ok() ? nlohmann::json::parse(reply->body, nullptr, false) : nlohmann::json();
    };
    const auto status = post("maintenance/status", nlohmann::json::object());
    ASSERT_TRUE(status.contains("header")) << status.dump();
    const std::string member = status["header"]["member_id"];
    post("maintenance/alarm", {{"action", "ACTIVATE"}, {"memberID", member}, {"alarm", "NOSPACE"}});
    auto raised = g.alarms();
    ASSERT_TRUE(raised.ok()) << raised.err().message;
    ASSERT_EQ(raised->size(), 1u);
    EXPECT_EQ(raised->at(0).rfind("NOSPACE on member ", 0), 0u) << raised->at(0);
    auto refused = g.put("fleet/hosts/a", "x");
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.err().message.find("database space exceeded"), std::string::npos) << refused.err().message;
    post("maintenance/alarm", {{"action", "DEACTIVATE"}, {"memberID", member}, {"alarm", "NOSPACE"}});
    EXPECT_TRUE(g.alarms()->empty());
    EXPECT_TRUE(g.put("fleet/hosts/a", "x").ok());
}

TEST(etcd_real, leases_keep_keys_alive_and_expire_them) {
    REQUIRE_ETCD();
    etcd_cluster c(1);
    ASSERT_TRUE(c.wait_healthy());
    auto g = gateway(c.endpoint_list());
    auto lease = g.grant(2s);
    ASSERT_TRUE(lease.ok());
    ASSERT_TRUE(g.put("leased", "x", lease.value()).ok());
    EXPECT_EQ(g.get("leased")->kvs[0].lease, lease.value());
    EXPECT_GE(g.keepalive(lease.value()).value(), 2) << "etcd may raise a TTL to its minimum";
    auto ttl = g.time_to_live(lease.value());
    ASSERT_TRUE(ttl.ok());
    EXPECT_GE(ttl->granted_ttl, 2);
    EXPECT_GE(ttl->ttl, 0);
    // Without keepalives the key goes with the lease.
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(poll_until([&] { return g.get("leased")->kvs.empty(); }, 10s));
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 1s);
    EXPECT_EQ(g.keepalive(lease.value()).value(), 0) << "an expired lease renews to nothing";
    EXPECT_EQ(g.time_to_live(lease.value())->ttl, -1);
    auto put = g.put("leased", "x", lease.value());
    ASSERT_FALSE(put.ok());
    EXPECT_EQ(put.err().code, errc::not_found);
    // Revoking removes at once.
    auto l2 = g.grant(30s).value();
    ASSERT_TRUE(g.put("leased2", "y", l2).ok());
    ASSERT_TRUE(g.revoke(l2).ok());
    EXPECT_TRUE(g.get("leased2")->kvs.empty());
    EXPECT_TRUE(g.revoke(l2).ok()) << "revoking twice is fine";
}

TEST(etcd_real, watch_delivers_puts_and_deletes_in_order_and_stops_on_request) {
    REQUIRE_ETCD();
    etcd_cluster c(1);
    ASSERT_TRUE(c.wait_healthy());
    auto g = gateway(c.endpoint_list());
    const int64_t start = g.put("w/0", "before").value() + 1;
    std::mutex mu;
    std::vector<std::string> seen;
    std::atomic<bool> stop{false};
    result<etcd_watch_end> end = make_error(errc::internal, "not run");
    std::thread t([&] {
        end = g.watch("w/", start, [&](const std::vector<etcd_event> & evs, int64_t) {
            std::lock_guard<std::mutex> l(mu);
            for (const auto & e : evs) seen.push_back((e.is_delete ? "del " : "put ") + e.kv.key + (e.is_delete ? "" : "=" + e.kv.value));
        }, [&] { return stop.load(); });
    });
    ASSERT_TRUE(g.put("w/a", "1").ok());
    ASSERT_TRUE(g.put("other", "ignored").ok());
    ASSERT_TRUE(g.put("w/a", "2").ok());
    ASSERT_TRUE(g.del("w/a").ok());
    ASSERT_TRUE(poll_until([&] {
        std::lock_guard<std::mutex> l(mu);
        return seen.size() == 3;
    }, 10s));
    {
        std::lock_guard<std::mutex> l(mu);
        EXPECT_EQ(seen, (std::vector<std::string>{"put w/a=1", "put w/a=2", "del w/a"}));
    }
    const auto t0 = std::chrono::steady_clock::now();
    stop = true;
    t.join();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
    ASSERT_TRUE(end.ok());
    EXPECT_GT(end->next_revision, start);
}

TEST(etcd_real, elections_hand_over_when_the_leader_lease_goes) {
    REQUIRE_ETCD();
    etcd_cluster c(1);
    ASSERT_TRUE(c.wait_healthy());
    auto g = gateway(c.endpoint_list());
    EXPECT_FALSE(g.leader("el")->has_value());
    const int64_t la = g.grant(30s).value(), lb = g.grant(30s).value();
    auto a = g.campaign("el", la, "host-a", [] { return false; });
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(g.leader("el").value()->value, "host-a");
    std::atomic<bool> b_won{false};
    result<etcd_leader> b = make_error(errc::internal, "not run");
    std::thread t([&] {
        b = g.campaign("el", lb, "host-b", [] { return false; });
        b_won = true;
    });
    // b waits while a leads; a's lease going (its agent died) hands over.
    EXPECT_FALSE(poll_until([&] { return b_won.load(); }, 1500ms));
    ASSERT_TRUE(g.revoke(la).ok());
    ASSERT_TRUE(poll_until([&] { return b_won.load(); }, 10s));
    t.join();
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(g.leader("el").value()->value, "host-b");
    ASSERT_TRUE(g.resign(b.value()).ok());
    EXPECT_FALSE(g.leader("el")->has_value());
    // A stopped campaign returns and withdraws.
    std::atomic<bool> stop{false};
    const int64_t lc = g.grant(30s).value();
    const int64_t ld = g.grant(30s).value();
    ASSERT_TRUE(g.campaign("el2", ld, "x", [] { return false; }).ok());
    std::thread t2([&] { EXPECT_FALSE(g.campaign("el2", lc, "c", [&] { return stop.load(); }).ok()); });
    stop = true;
    t2.join();
    EXPECT_EQ(g.leader("el2").value()->value, "x");
}

TEST(etcd_real, a_dead_member_is_failed_over) {
    REQUIRE_ETCD();
    etcd_cluster c(3);
    ASSERT_TRUE(c.wait_healthy());
    auto g = gateway(c.endpoint_list());
    ASSERT_TRUE(g.put("f", "1").ok());  // prefers member 0 now
    std::atomic<bool> stop{false};
    std::atomic<int> events{0};
    std::atomic<bool> broke{false};
    int64_t next = g.get("f")->revision + 1;  // before the thread: the put below must be after it
    std::thread t([&] {
        while (!stop) {
            auto w = g.watch("f", next, [&](const std::vector<etcd_event> & evs, int64_t) {
                events += int(evs.size());
                for (const auto & e : evs) next = std::max(next, e.kv.mod_revision + 1);
            }, [&] { return stop.load(); });
            if (!w.ok()) broke = true;  // the member serving the watch died: resume elsewhere
        }
    });
    struct joiner {
        std::atomic<bool> & stop;
        std::thread & t;
        ~joiner() {
            stop = true;
            if (t.joinable()) t.join();
        }
    } join_on_exit{stop, t};  // a failed ASSERT must not leave a joinable thread (std::terminate)
    ASSERT_TRUE(g.put("f", "2").ok());
    ASSERT_TRUE(poll_until([&] { return events.load() == 1; }, 10s));
    c.kill_member(0);
    ASSERT_TRUE(poll_until([&] { return g.put("f", "3").ok(); }, 20s));
    EXPECT_EQ(g.get("f")->kvs[0].value, "3");
    ASSERT_TRUE(poll_until([&] { return events.load() == 2; }, 20s)) << "the watch resumed on another member";
    EXPECT_TRUE(broke.load());
    auto lease = g.grant(5s);
    ASSERT_TRUE(lease.ok());
    EXPECT_GT(g.keepalive(lease.value()).value(), 0);
}

TEST(etcd_real, a_hung_member_is_left_by_watches_and_keepalives) {
    REQUIRE_ETCD();
    etcd_cluster c(3);
    ASSERT_TRUE(c.wait_healthy());
    etcd_options o;
    o.endpoints = c.endpoint_list();
    o.stream_idle = 1000ms;
    o.keepalive_timeout = 500ms;
    etcd_gateway g(o);
    ASSERT_TRUE(g.put("h", "1").ok());  // prefers member 0
    auto lease = g.grant(2s);
    ASSERT_TRUE(lease.ok());
    std::atomic<bool> stop{false};
    std::atomic<int> events{0};
    int64_t next = g.get("h")->revision + 1;
    std::thread t([&] {
        while (!stop) {
            auto w = g.watch("h", next, [&](const std::vector<etcd_event> & evs, int64_t) {
                events += int(evs.size());
                for (const auto & e : evs) next = std::max(next, e.kv.mod_revision + 1);
            }, [&] { return stop.load(); });
            (void) w;
        }
    });
    std::thread keep([&] {
        while (!stop) {
            (void) g.keepalive(lease.value());
            std::this_thread::sleep_for(600ms);
        }
    });
    struct joiner {
        std::atomic<bool> & stop;
        std::thread & a;
        std::thread & b;
        ~joiner() {
            stop = true;
            if (a.joinable()) a.join();
            if (b.joinable()) b.join();
        }
    } join_on_exit{stop, t, keep};
    ASSERT_TRUE(g.put("h", "2").ok());
    ASSERT_TRUE(poll_until([&] { return events.load() == 1; }, 10s));

    // Member 0 hangs (SIGSTOP): connections are accepted, nothing is answered.
    c.freeze_member(0);
    etcd_options others;
    others.endpoints = {c.endpoint(1), c.endpoint(2)};
    etcd_gateway w(others);
    ASSERT_TRUE(poll_until([&] { return w.put("h", "3").ok(); }, 20s));
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(poll_until([&] { return events.load() == 2; }, 20s)) << "the watch moved to another member";
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
    EXPECT_LE(took, 4000ms) << "idle bound 1 s + the member check";
    // The lease (TTL 2 s) lived through it: keepalives gave up on the hung member within 500 ms.
    std::this_thread::sleep_for(3s);
    auto ttl = w.time_to_live(lease.value());
    ASSERT_TRUE(ttl.ok());
    EXPECT_GT(ttl->ttl, 0) << "the lease expired behind a hung member";
    c.thaw_member(0);
}

TEST(etcd_real, every_member_is_learned_from_one_endpoint) {
    REQUIRE_ETCD();
    etcd_cluster c(3);
    ASSERT_TRUE(c.wait_healthy());
    auto g = gateway({c.endpoint(0)});
    auto added = g.sync_members();
    ASSERT_TRUE(added.ok()) << added.err().message;
    EXPECT_EQ(added.value(), 2u);
    EXPECT_EQ(g.endpoints().size(), 3u);
    EXPECT_EQ(g.sync_members().value(), 0u) << "known members are not added twice";
    c.kill_member(0);
    EXPECT_TRUE(poll_until([&] { return g.put("x", "1").ok(); }, 20s)) << "told one member, it fails over to the others";
}

}  // namespace
}  // namespace rc::fleet
