// The elected triager against the fault-injecting fake GitHub: a crash loop is one issue with
// the triage fields and the fingerprint; the same fault thrice is one issue and two comments;
// GitHub failing (500s, 429 + Retry-After) files later, once; a triager killed between "GitHub
// created the issue" and "outbox done" is replaced and nothing is filed twice.
#include <signal.h>

#include "fake_github.h"
#include "fleet_test_fixture.h"

namespace rc::test {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

constexpr const char * k_token = "ghp-test-token-never-logged";

class fleet_triage : public fleet_fixture {
  protected:
    std::vector<std::string> env() const { return {"GITHUB_API_URL=" + gh.url(), std::string("GITHUB_TOKEN=") + k_token}; }
    std::vector<std::string> triager_flags(std::vector<std::string> more = {}) const {
        std::vector<std::string> f = {"--github-repo", "acme/lab", "--github-backoff", "300ms", "--github-timeout", "5s", "--filing-grace", "6s"};
        f.insert(f.end(), more.begin(), more.end());
        return f;
    }
    json outbox(const std::string & id) {  // by incident id, whichever host published it
        auto all = etcd->get_prefix(keys.outbox());
        if (all.ok())
            for (const auto & kv : all->kvs)
                if (auto j = json::parse(kv.value, nullptr, false); j.is_object() && j.value("incident", "") == id) {
                    EXPECT_EQ(kv.key, keys.outbox_entry(j.value("host", ""), id)) << "an entry sits under its publisher's id";
                    return j;
                }
        return json();
    }
    std::vector<json> outbox_all() {
        std::vector<json> out;
        auto all = etcd->get_prefix(keys.outbox());  // named: a range-for over a temporary's member dangles
        if (!all.ok()) return out;
        for (const auto & kv : all->kvs) out.push_back(json::parse(kv.value));
        return out;
    }
    void expect_no_token_in_logs() {
        for (const auto & a : agents) EXPECT_EQ(a->log().find(k_token), std::string::npos) << a->id() << " logged the GitHub token";
        for (const auto & c : gh.calls()) EXPECT_EQ(c.auth, std::string("Bearer ") + k_token);
    }

    fake_github gh;
};

TEST_F(fleet_triage, a_crash_loop_is_exactly_one_issue_with_triage_fields_and_fingerprint) {
    REQUIRE_ETCD();
    ASSERT_NO_FATAL_FAILURE(start_cluster(1));
    // a serves the triage model; b's server can never start (it preloads a model that is not there).
    add_agent("a", triager_flags({"--triage-model", "tiny"}), env());
    ASSERT_TRUE(poll_until([&] { return ready("a"); }, 120s)) << logs();
    add_agent("b", triager_flags({"--preload", "missing-model"}), env());
    ASSERT_TRUE(poll_until([&] { return gh.issues().size() == 1; }, 120s)) << logs();
    auto issue = gh.issues()[0];
    EXPECT_NE(issue.body.find("`crash_loop`"), std::string::npos) << issue.body;
    EXPECT_NE(issue.body.find("**Severity:** "), std::string::npos);
    EXPECT_NE(issue.body.find("**Component:** "), std::string::npos);
    EXPECT_NE(issue.body.find("**Suggested action:** "), std::string::npos);
    EXPECT_NE(issue.body.find("<!-- rustycage:fingerprint=fp-"), std::string::npos);
    EXPECT_NE(issue.body.find("cannot preload"), std::string::npos) << "the log tail is the evidence";
    EXPECT_NE(issue.body.find("Triaged by the model `tiny` served on `a`"), std::string::npos)
        << "the model answers schema-valid JSON even with random weights\n" << issue.body;
    EXPECT_FALSE(issue.title.empty());
    EXPECT_EQ(issue.labels, std::vector<std::string>{"rustycage-incident"});

    auto entries = outbox_all();
    ASSERT_EQ(entries.size(), 1u);
    EXPECT_EQ(entries[0]["state"], "done");
    EXPECT_EQ(entries[0]["result"]["issue"], 1);
    EXPECT_EQ(entries[0]["triage"]["source"], "model");
    const std::string fp = entries[0]["fingerprint"];
    EXPECT_NE(issue.body.find(fp), std::string::npos);
    ASSERT_EQ(etcd->get(keys.issue(fp))->kvs.size(), 1u);
    // The loop goes on (b keeps restarting) but is one incident, one issue, no comments.
    const int restarts = record("b")->server.restarts;
    ASSERT_TRUE(poll_until([&] { auto r = record("b"); return r && r->server.restarts >= restarts + 2; }, 60s));
    EXPECT_EQ(gh.issues().size(), 1u);
    EXPECT_TRUE(gh.issues()[0].comments.empty());
    EXPECT_EQ(gh.calls("POST", "/issues").size(), 1u);
    EXPECT_EQ(record("b")->server.state, "crash_loop");
    expect_no_token_in_logs();
}

TEST_F(fleet_triage, the_same_fault_three_times_is_one_issue_and_two_comments) {
    REQUIRE_ETCD();
    ASSERT_NO_FATAL_FAILURE(start_cluster(1, {"a"}));
    add_agent("a", triager_flags(), env());
    for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(poll_until([&] { return ready("a"); }, 120s)) << logs();
        const int pid = record("a").value_or(fleet::host_record{}).server.pid;
        ASSERT_GT(pid, 0);
        ASSERT_EQ(kill(pid, SIGSEGV), 0);
        ASSERT_TRUE(poll_until([&] { auto r = record("a"); return r && r->server.pid != pid; }, 60s)) << logs();
    }
    ASSERT_TRUE(poll_until([&] {
        auto is = gh.issues();
        return is.size() == 1 && is[0].comments.size() == 2;
    }, 120s)) << logs();
    auto issue = gh.issues()[0];
    EXPECT_NE(issue.body.find("signal 11"), std::string::npos) << issue.body;
    EXPECT_NE(issue.body.find("Triaged by rules, not by a model: no triage model is configured"), std::string::npos) << issue.body;
    ASSERT_TRUE(poll_until([&] {
        auto all = outbox_all();
        return all.size() == 3 && std::all_of(all.begin(), all.end(), [](const json & e) { return e["state"] == "done"; });
    }, 30s)) << "GitHub has the comment before the outbox says done";
    std::set<std::string> fps;
    for (const auto & e : outbox_all()) fps.insert(e["fingerprint"].get<std::string>());
    EXPECT_EQ(fps.size(), 1u) << "one fingerprint for the same fault";
    EXPECT_EQ(gh.calls("POST", "/issues").size(), 1u);
    EXPECT_EQ(gh.calls("POST", "/comments").size(), 2u);
    expect_no_token_in_logs();
}

TEST_F(fleet_triage, github_failing_for_a_while_is_filed_later_once) {
    REQUIRE_ETCD();
    ASSERT_NO_FATAL_FAILURE(start_cluster(1, {"a"}));
    gh.fail_for(5s, 500);
    add_agent("a", triager_flags({"--preload", "missing-model"}), env());
    ASSERT_TRUE(poll_until([&] { return gh.calls().size() >= 2; }, 60s)) << logs();
    gh.rate_limit_next(1, 3);
    ASSERT_TRUE(poll_until([&] { return gh.issues().size() == 1; }, 120s)) << logs();
    auto calls = gh.calls();
    size_t limited = calls.size();
    for (size_t i = 0; i < calls.size(); ++i)
        if (calls[i].status == 429) limited = i;
    ASSERT_LT(limited + 1, calls.size()) << "the rate limit was hit";
    const auto waited = calls[limited + 1].at - calls[limited].at;
    EXPECT_GE(waited, 2900ms) << "Retry-After: 3 was not honoured";
    int failures = 0;
    for (const auto & c : calls) failures += c.status == 500;
    EXPECT_GE(failures, 2);
    auto e = outbox_all();
    ASSERT_EQ(e.size(), 1u);
    EXPECT_EQ(e[0]["state"], "done");
    EXPECT_GE(e[0]["attempts"].get<int>(), 3);
    EXPECT_EQ(gh.calls("POST", "/issues").size(), 1u);
    EXPECT_EQ(gh.issues().size(), 1u);
    expect_no_token_in_logs();
}

TEST_F(fleet_triage, a_triager_killed_mid_filing_is_replaced_and_nothing_is_filed_twice) {
    REQUIRE_ETCD();
    ASSERT_NO_FATAL_FAILURE(start_cluster(1));
    add_agent("a", triager_flags(), env());
    add_agent("b", triager_flags(), env());
    ASSERT_TRUE(poll_until([&] { return ready("a") && ready("b"); }, 120s)) << logs();
    std::string leader;
    ASSERT_TRUE(poll_until([&] {
        auto l = etcd->leader(keys.triager_election());
        if (!l.ok() || !l->has_value()) return false;
        leader = (*l)->value;
        return true;
    }, 30s));
    // GitHub will create the issue and then take 4 s to say so: the leader is killed in between.
    gh.delay_writes(4s);
    add_agent("c", {"--preload", "missing-model"});
    ASSERT_TRUE(poll_until([&] { return gh.issues().size() == 1; }, 60s)) << logs();
    agent_process & dying = leader == "a" ? *agents[0] : *agents[1];
    const std::string heir = leader == "a" ? "b" : "a";
    dying.kill_agent(record(leader)->server.pid);
    gh.delay_writes(0ms);
    auto entries = outbox_all();
    ASSERT_EQ(entries.size(), 1u);
    const std::string id = entries[0]["incident"];
    EXPECT_EQ(entries[0]["state"], "filing") << "killed between GitHub's create and the outbox's done";
    ASSERT_TRUE(poll_until([&] { return outbox(id)["state"] == "done"; }, 60s)) << logs();
    json done = outbox(id);
    EXPECT_EQ(done["filing"]["by"], heir);
    EXPECT_EQ(done["result"]["action"], "created") << "found by its marker, not filed again";
    EXPECT_EQ(done["result"]["issue"], 1);
    EXPECT_EQ(gh.issues().size(), 1u);
    EXPECT_EQ(gh.calls("POST", "/issues").size(), 1u);
    auto l = etcd->leader(keys.triager_election());
    ASSERT_TRUE(l.ok() && l->has_value());
    EXPECT_EQ((*l)->value, heir);
    expect_no_token_in_logs();
}

}  // namespace
}  // namespace rc::test
