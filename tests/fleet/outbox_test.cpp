// The outbox against an in-memory etcd and the fault-injecting fake GitHub (over HTTP, through the
// real REST client): exact GitHub calls and etcd keys, dedup by fingerprint, the crash window,
// rate limits, claims held by another triager.
#include <gtest/gtest.h>

#include "fake_etcd.h"
#include "fake_github.h"
#include "fleet/incidents/incident_publisher.h"
#include "fleet/incidents/outbox.h"
#include "support/poll.h"
#include "support/port.h"
#include "support/process.h"
#include "support/temp_dir.h"
#include "support/text_file.h"
#include "store/timestamps.h"

namespace rc::fleet {
namespace {

using test::fake_etcd;
using test::fake_github;
using namespace std::chrono_literals;

class outbox : public ::testing::Test {
  protected:
    void SetUp() override {
        github_options o;
        o.api_url = gh.url();
        o.repo = "acme/lab";
        o.token = "tok-secret-123";
        o.timeout = 5s;
        client = std::make_unique<github_rest_client>(o);
        outbox_options b;
        b.initial_backoff = 1000ms;
        b.filing_grace = 10s;
        worker = std::make_unique<outbox_worker>(etcd, *client, keys, "gpu-a", b, [this](const fleet_incident & i) {
            ++triaged;
            return rule_triage(i, "unit test");
        });
    }

    // Publishes one incident (with its outbox entry) the way agents do.
    std::string add_incident(const std::string & id, const std::string & kind, const std::string & reason) {
        fleet_incident i;
        i.id = id;
        i.host = "gpu-b";
        i.kind = kind;
        i.time = "2026-01-01T00:00:00.000Z";
        i.reason = reason;
        i.versions = {{"rustycage", "0.1.0"}};
        i.evidence = {{"log_tail", {"line one", "```boom```"}}};
        i.fingerprint = incident_fingerprint(kind, reason, "", "0.1.0");
        outbox_entry e;
        e.incident_id = id;
        e.host = i.host;
        e.fingerprint = i.fingerprint;
        auto r = etcd.txn({etcd_compare::absent(keys.incident(i.host, id))},
                          {etcd_op::put(keys.incident(i.host, id), to_json(i).dump()), etcd_op::put(keys.outbox_entry(i.host, id), to_json(e).dump())});
        EXPECT_TRUE(r.ok() && r->succeeded);
        return i.fingerprint;
    }

    outbox_entry entry(const std::string & id) {
        auto v = etcd.value(keys.outbox_entry("gpu-b", id));
        EXPECT_TRUE(v.has_value());
        return parse_outbox_entry(v.value_or("{}")).value();
    }

    // Runs the worker until the entry is done or `rounds` runs passed, each `step` later in time.
    void run_until_done(const std::string & id, sys_time & now, int rounds = 10, std::chrono::seconds step = 1s) {
        for (int i = 0; i < rounds && entry(id).state != "done"; ++i) {
            ASSERT_TRUE(worker->run_once(lease, now).ok());
            now += step;
        }
    }

    std::vector<std::string> call_list() {
        std::vector<std::string> out;
        for (const auto & c : gh.calls()) out.push_back(c.method + " " + c.path + " " + std::to_string(c.status));
        return out;
    }

    fake_etcd etcd;
    fake_github gh;
    fleet_keys keys;
    std::unique_ptr<github_rest_client> client;
    std::unique_ptr<outbox_worker> worker;
    int triaged = 0;
    int64_t lease = 77;
};

TEST_F(outbox, a_new_fingerprint_is_triaged_then_filed_once_with_its_markers) {
    const std::string fp = add_incident("inc-1", "crash_loop", "the server exits before it is ready (exit status 1)");
    sys_time now = std::chrono::system_clock::now();
    etcd.clear_writes();
    run_until_done("inc-1", now);
    EXPECT_EQ(triaged, 1);
    EXPECT_EQ(call_list(), (std::vector<std::string>{"GET /repos/acme/lab/issues 200", "POST /repos/acme/lab/issues 201"}));
    EXPECT_EQ(gh.calls()[0].query.find("labels=rustycage-incident") != std::string::npos, true) << gh.calls()[0].query;
    for (const auto & c : gh.calls()) EXPECT_EQ(c.auth, "Bearer tok-secret-123");
    auto issues = gh.issues();
    ASSERT_EQ(issues.size(), 1u);
    EXPECT_NE(issues[0].body.find(fingerprint_marker(fp)), std::string::npos);
    EXPECT_NE(issues[0].body.find(incident_marker("inc-1")), std::string::npos);
    EXPECT_NE(issues[0].body.find("**Severity:** critical"), std::string::npos);
    EXPECT_NE(issues[0].body.find("Triaged by rules, not by a model: unit test"), std::string::npos);
    EXPECT_EQ(issues[0].body.find("```boom```"), std::string::npos) << "a log line must not close the code fence";
    EXPECT_EQ(issues[0].labels, std::vector<std::string>{"rustycage-incident"});
    auto e = entry("inc-1");
    EXPECT_EQ(e.state, "done");
    EXPECT_EQ(e.action, "created");
    EXPECT_EQ(e.issue_number, 1);
    ASSERT_TRUE(etcd.value(keys.issue(fp)).has_value());
    // triage, claim, done (+ the fingerprint's issue record in the same transaction): nothing else.
    EXPECT_EQ(etcd.writes(), (std::vector<std::string>{"put fleet/outbox/gpu-b/inc-1", "put fleet/outbox/gpu-b/inc-1", "put fleet/outbox/gpu-b/inc-1",
                                                        "put fleet/issues/" + fp}));
    // Done is done: later runs touch nothing.
    gh.reset();
    ASSERT_TRUE(worker->run_once(lease, now + 1h).ok());
    EXPECT_TRUE(gh.calls().empty());
}

TEST_F(outbox, recurrences_comment_on_the_issue_and_need_no_triage) {
    add_incident("inc-1", "server_crash", "signal 11 (Segmentation fault)");
    add_incident("inc-2", "server_crash", "signal 11 (Segmentation fault)");
    add_incident("inc-3", "server_crash", "signal 11 (Segmentation fault)");
    sys_time now = std::chrono::system_clock::now();
    run_until_done("inc-3", now);
    EXPECT_EQ(entry("inc-1").action, "created");
    EXPECT_EQ(entry("inc-2").action, "commented");
    EXPECT_EQ(entry("inc-3").action, "commented");
    EXPECT_EQ(triaged, 1);
    auto issues = gh.issues();
    ASSERT_EQ(issues.size(), 1u);
    ASSERT_EQ(issues[0].comments.size(), 2u);
    EXPECT_NE(issues[0].comments[0].find(incident_marker("inc-2")), std::string::npos);
    EXPECT_NE(issues[0].comments[1].find(incident_marker("inc-3")), std::string::npos);
    EXPECT_EQ(gh.calls("POST", "/issues").size(), 1u);
    EXPECT_EQ(gh.calls("POST", "/comments").size(), 2u);
}

TEST_F(outbox, a_closed_issue_that_recurs_is_reopened) {
    add_incident("inc-1", "server_crash", "signal 6 (Aborted)");
    sys_time now = std::chrono::system_clock::now();
    run_until_done("inc-1", now);
    gh.close_issue(1);
    add_incident("inc-2", "server_crash", "signal 6 (Aborted)");
    run_until_done("inc-2", now);
    EXPECT_EQ(entry("inc-2").action, "reopened");
    auto issues = gh.issues();
    ASSERT_EQ(issues.size(), 1u);
    EXPECT_EQ(issues[0].state, "open");
    ASSERT_EQ(issues[0].comments.size(), 1u);
    EXPECT_NE(issues[0].comments[0].find("Reopened"), std::string::npos);
    EXPECT_EQ(gh.calls("PATCH", "/issues/1").size(), 1u);
}

TEST_F(outbox, the_crash_window_is_closed_by_looking_before_filing_again) {
    // GitHub creates the issue but the answer is lost (as if the triager died before writing "done").
    add_incident("inc-1", "crash_loop", "exit status 1");
    gh.create_then_fail_next(1);
    sys_time now = std::chrono::system_clock::now();
    ASSERT_TRUE(worker->run_once(lease, now).ok());  // triage
    ASSERT_TRUE(worker->run_once(lease, now).ok());  // claim + create (lost answer)
    EXPECT_EQ(entry("inc-1").state, "filing");
    EXPECT_EQ(gh.issues().size(), 1u);
    run_until_done("inc-1", now, 10, 2s);
    EXPECT_EQ(entry("inc-1").state, "done");
    EXPECT_EQ(entry("inc-1").action, "created");
    EXPECT_EQ(gh.issues().size(), 1u) << "filed twice";
    EXPECT_EQ(gh.calls("POST", "/issues").size(), 1u);
}

TEST_F(outbox, a_lost_comment_answer_is_not_commented_twice) {
    add_incident("inc-1", "server_crash", "signal 11 (Segmentation fault)");
    sys_time now = std::chrono::system_clock::now();
    run_until_done("inc-1", now);
    add_incident("inc-2", "server_crash", "signal 11 (Segmentation fault)");
    gh.create_then_fail_next(1);
    run_until_done("inc-2", now, 10, 2s);
    EXPECT_EQ(entry("inc-2").action, "commented");
    EXPECT_EQ(gh.issues()[0].comments.size(), 1u);
}

TEST_F(outbox, rate_limits_are_honoured_and_nothing_is_lost) {
    add_incident("inc-1", "crash_loop", "exit status 1");
    gh.rate_limit_next(1, 7);
    sys_time now = std::chrono::system_clock::now();
    ASSERT_TRUE(worker->run_once(lease, now).ok());  // triage
    ASSERT_TRUE(worker->run_once(lease, now).ok());  // claim, 429
    auto e = entry("inc-1");
    EXPECT_EQ(e.state, "filing");
    EXPECT_NE(e.last_error.find("429"), std::string::npos);
    EXPECT_EQ(e.last_error.find("tok-secret-123"), std::string::npos);
    EXPECT_GE(store::parse_rfc3339(e.next_attempt_at).value(), now + 6s);
    const size_t calls = gh.calls().size();
    ASSERT_TRUE(worker->run_once(lease, now + 3s).ok());
    EXPECT_EQ(gh.calls().size(), calls) << "retried before Retry-After passed";
    sys_time later = now + 8s;
    run_until_done("inc-1", later);
    EXPECT_EQ(entry("inc-1").state, "done");
    EXPECT_EQ(gh.issues().size(), 1u);

    // 403 with X-RateLimit-Remaining: 0 waits for X-RateLimit-Reset.
    add_incident("inc-2", "server_crash", "signal 9 (Killed)");
    const auto reset = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count() + 40;
    gh.rate_limit_reset_next(1, reset);
    ASSERT_TRUE(worker->run_once(lease, later).ok());
    ASSERT_TRUE(worker->run_once(lease, later).ok());
    EXPECT_GE(store::parse_rfc3339(entry("inc-2").next_attempt_at).value(), later + 30s);
}

TEST_F(outbox, github_down_for_a_while_means_filed_later_once) {
    add_incident("inc-1", "crash_loop", "exit status 1");
    gh.fail_next(4, 500);
    sys_time now = std::chrono::system_clock::now();
    run_until_done("inc-1", now, 30, 20s);
    EXPECT_EQ(entry("inc-1").state, "done");
    EXPECT_GE(entry("inc-1").attempts, 2);
    EXPECT_EQ(gh.issues().size(), 1u);
    EXPECT_EQ(gh.calls("POST", "/issues").size(), 1u);
}

TEST_F(outbox, a_claim_by_another_triager_is_left_alone_for_the_grace_period) {
    add_incident("inc-1", "crash_loop", "exit status 1");
    sys_time now = std::chrono::system_clock::now();
    auto e = entry("inc-1");
    e.state = "filing";
    e.filing_by = "gpu-c";
    e.filing_lease = 5;
    e.filing_since = store::format_rfc3339(now);
    e.triage = rule_triage(fleet_incident{}, "x");
    ASSERT_TRUE(etcd.put(keys.outbox_entry("gpu-b", "inc-1"), to_json(e).dump()).ok());
    ASSERT_TRUE(worker->run_once(lease, now + 5s).ok());
    EXPECT_TRUE(gh.calls().empty());
    EXPECT_EQ(entry("inc-1").filing_by, "gpu-c");
    ASSERT_TRUE(worker->run_once(lease, now + 11s).ok());
    EXPECT_EQ(entry("inc-1").state, "done");
    EXPECT_EQ(entry("inc-1").filing_by, "gpu-a");
    EXPECT_EQ(gh.issues().size(), 1u);
}

TEST(outbox_plan, every_state_has_one_next_step) {
    const sys_time now = std::chrono::system_clock::now();
    outbox_entry e;
    EXPECT_EQ(plan_outbox(e, now, 1, false, 30s).step, outbox_step::triage);
    EXPECT_EQ(plan_outbox(e, now, 1, true, 30s).step, outbox_step::claim) << "a recurrence needs no triage";
    e.triage = triage_result{};
    EXPECT_EQ(plan_outbox(e, now, 1, false, 30s).step, outbox_step::claim);
    e.next_attempt_at = store::format_rfc3339(now + 5s);
    EXPECT_EQ(plan_outbox(e, now, 1, false, 30s).step, outbox_step::wait);
    e.next_attempt_at.clear();
    e.state = "filing";
    e.filing_lease = 1;
    e.filing_since = store::format_rfc3339(now);
    EXPECT_EQ(plan_outbox(e, now, 1, false, 30s).step, outbox_step::resume) << "our own claim";
    EXPECT_EQ(plan_outbox(e, now, 2, false, 30s).step, outbox_step::wait) << "another's, recent";
    EXPECT_EQ(plan_outbox(e, now + 31s, 2, false, 30s).step, outbox_step::resume) << "another's, stale";
    e.state = "done";
    EXPECT_EQ(plan_outbox(e, now, 1, false, 30s).step, outbox_step::done);
}

TEST(incident_publisher, local_incidents_reach_etcd_once_with_their_outbox_entry) {
    test::temp_dir dir("publisher");
    fake_etcd etcd;
    fleet_keys keys;
    incident_publisher pub(etcd, keys, "gpu-a", dir.path() / "models", dir.path() / "data", {{"rustycage", "0.1.0"}}, {{"backend", "cpu"}});
    std::filesystem::create_directories(dir.path() / "data");
    auto inc = pub.record("server_crash", "", "", "signal 11 (Segmentation fault)", {{"log_tail", {"x"}}});
    ASSERT_TRUE(inc.ok());
    // Another writer of the same log (the server's quarantine, `rustycage create`).
    ASSERT_TRUE(store::incident_log::in_store(dir.path() / "models").record("quarantine_failed", "bad:latest", "NaN", {{"layers", {"sha256-1"}}}).ok());
    etcd.set_down(true);
    EXPECT_FALSE(pub.publish_once().ok()) << "etcd down: kept locally";
    etcd.set_down(false);
    auto n = pub.publish_once();
    ASSERT_TRUE(n.ok());
    EXPECT_EQ(n.value(), 2);
    auto w = etcd.writes();
    ASSERT_EQ(w.size(), 4u);
    EXPECT_EQ(w[0], "put fleet/incidents/gpu-a/" + inc->id) << "under the publisher's id";
    EXPECT_EQ(w[1], "put fleet/outbox/gpu-a/" + inc->id);
    auto stored = parse_fleet_incident(etcd.value(keys.incident("gpu-a", inc->id)).value()).value();
    EXPECT_EQ(stored.host, "gpu-a");
    EXPECT_EQ(stored.fingerprint, incident_fingerprint("server_crash", "signal 11 (Segmentation fault)", "", "0.1.0"));
    EXPECT_EQ(pub.publish_once().value(), 0);
    // A restarted agent (a new publisher on the same data dir) publishes nothing again.
    incident_publisher again(etcd, keys, "gpu-a", dir.path() / "models", dir.path() / "data", {{"rustycage", "0.1.0"}}, {});
    etcd.clear_writes();
    EXPECT_EQ(again.publish_once().value(), 0);
    EXPECT_TRUE(etcd.writes().empty());
}

}  // namespace
}  // namespace rc::fleet
