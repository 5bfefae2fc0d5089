// Cohort upgrades on a real 3-member etcd with 3 real agents, to artifacts packed from this build
// (make_rollout_artifacts.sh): a good upgrade under a client loop that never loses its model; a bad
// build caught by the canary's smoke test, halted, one incident → one issue; a wrong SHA-256
// refused before unpacking; the driver killed mid-rollout; a host killed -9 during its cutover.
#include <signal.h>

#include <atomic>
#include <map>
#include <thread>

#include "fake_github.h"
#include "fleet/rollout/rollout_record.h"
#include "fleet_test_fixture.h"

namespace rc::test {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
namespace fs = std::filesystem;

const std::string good_version = "0.2.0-test";

std::string artifact(const std::string & name) { return std::string(RC_ROLLOUT_ARTIFACTS) + "/" + name + ".tar.gz"; }
std::string sha(const std::string & name) {
    std::string s = slurp(std::string(RC_ROLLOUT_ARTIFACTS) + "/" + name + ".sha256");
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
    return s;
}

class fleet_rollout : public fleet_fixture {
  protected:
    // Three hosts: a and b serve `duo` (and tiny), c only tiny. `host_env`: more environment for one host.
    void start_fleet(std::vector<std::string> extra = {}, std::vector<std::string> env = {},
                     std::map<std::string, std::vector<std::string>> host_env = {}) {
        ASSERT_NO_FATAL_FAILURE(start_cluster(3));
        extra.insert(extra.end(), {"--rollout-ready-timeout", "15s", "--trusted-keys", std::string(RC_ROLLOUT_ARTIFACTS) + "/trusted.pem"});
        for (const char * id : {"a", "b", "c"}) {
            fs::create_directories(root.path() / id / "models");
            if (std::string(id) != "c")
                fs::create_symlink(std::string(RC_TEST_MODELS_DIR) + "/tiny-chat.gguf", root.path() / id / "models" / "duo.gguf");
            std::vector<std::string> e = env;
            e.insert(e.end(), host_env[id].begin(), host_env[id].end());
            add_agent(id, extra, e);
        }
        ASSERT_TRUE(poll_until([&] { return ready("a") && ready("b") && ready("c"); }, 120s)) << logs();
    }
    std::optional<fleet::rollout_view> rollout() {
        auto v = fleet::read_rollout(*etcd, keys);
        if (!v.ok()) return std::nullopt;
        return v.value();
    }
    std::string step(const std::string & host) {
        auto v = rollout();
        if (!v) return "";
        auto it = v->progress.find(host);
        return it == v->progress.end() ? "" : it->second.step;
    }
    bool finished() {
        auto v = rollout();
        return v && v->rollout.finished();
    }
    cli_output upgrade(const std::string & name, const std::string & sum, std::vector<std::string> more = {}) {
        std::vector<std::string> args = {"fleet", "upgrade", "--etcd", cluster->endpoints(), "--to", name == "bad" ? "0.2.0-bad" : good_version,
                                         "--artifact", artifact(name), "--sha256", sum, "--bake", "1s", "--smoke-model", "tiny"};
        args.insert(args.end(), more.begin(), more.end());
        return run_rustycage(args);
    }
    agent_process & agent(const std::string & id) {
        for (auto & a : agents)
            if (a->id() == id) return *a;
        throw std::runtime_error("no agent " + id);
    }
    // The executable the host's server runs now (/proc/<pid>/exe), "" when it has none.
    std::string server_exe(const std::string & id) {
        auto r = record(id);
        if (!r || r->server.pid <= 0) return "";
        std::error_code ec;
        return fs::read_symlink("/proc/" + std::to_string(r->server.pid) + "/exe", ec).string();
    }
    fs::path data(const std::string & id) { return agent(id).dir() / "data"; }
    std::string current(const std::string & id) {
        std::error_code ec;
        return fs::read_symlink(data(id) / "versions" / "current", ec).string();
    }
    void expect_on_new_version(const std::string & id) {
        EXPECT_EQ(current(id), good_version) << id;
        const auto want = fs::canonical(data(id) / "versions" / good_version / "bin" / "rustycage").string();
        EXPECT_TRUE(poll_until([&] { return server_exe(id) == want && ready(id); }, 30s)) << id << " runs " << server_exe(id);
    }
    std::string rollout_logs() {
        auto r = run_rustycage({"fleet", "rollout", "status", "--etcd", cluster->endpoints()});
        return r.out + "\n" + logs();
    }
};

// A client of `duo` (served by a and b) for as long as it runs: each request goes to an `up` host
// serving it and, failing, is retried on the other; it also counts the moments neither was up.
struct duo_client {
    explicit duo_client(fleet::etcd_gateway & e) : etcd(e), thread([this] { loop(); }) {}
    ~duo_client() { stop(); }
    void stop() {
        done = true;
        if (thread.joinable()) thread.join();
    }
    void loop() {
        while (!done) {
            std::vector<std::string> up;
            for (const char * id : {"a", "b"})
                if (auto r = rec(id); r && r->server.ready) up.push_back(r->openai_url);
            if (up.empty()) {
                ++both_down;
                std::this_thread::sleep_for(20ms);
                continue;
            }
            bool ok = false;
            for (int round = 0; round < 3 && !ok; ++round)
                for (const auto & url : up)
                    if (!ok && chat(url)) ok = true;
            ++(ok ? served : failed);
            std::this_thread::sleep_for(20ms);
        }
    }
    std::optional<fleet::host_record> rec(const std::string & id) {
        auto r = etcd.get(fleet::fleet_keys{}.host(id));
        if (!r.ok() || r->kvs.empty()) return std::nullopt;
        auto h = fleet::parse_host_record(r->kvs[0].value);
        return h.ok() ? std::optional<fleet::host_record>(h.value()) : std::nullopt;
    }
    static bool chat(const std::string & url) {
        http::client_request req;
        req.method = "POST";
        req.url = url + "/v1/chat/completions";
        req.headers = {"Content-Type: application/json"};
        req.body = R"({"model":"duo","messages":[{"role":"user","content":"hi"}],"max_tokens":2})";
        req.timeout = 20s;
        auto r = http::call(req);
        return r.ok() && r->status == 200;
    }
    fleet::etcd_gateway & etcd;
    std::atomic<bool> done{false};
    std::atomic<int> served{0}, failed{0}, both_down{0};
    std::thread thread;
};

TEST_F(fleet_rollout, a_good_upgrade_reaches_every_host_and_a_shared_model_is_never_unserved) {
    REQUIRE_ETCD();
    start_fleet();
    const auto t0 = std::chrono::steady_clock::now();
    duo_client client(*etcd);
    ASSERT_TRUE(poll_until([&] { return client.served > 0; }, 30s));
    auto up = upgrade("good", sha("good"), {"--cohort-size", "2"});
    ASSERT_EQ(up.code, 0) << up.out;
    EXPECT_NE(up.out.find("rollout ro-"), std::string::npos);
    // A second rollout while this one runs is refused, and changes nothing.
    auto again = upgrade("good", sha("good"));
    EXPECT_EQ(again.code, 1);
    EXPECT_NE(again.out.find("is not finished"), std::string::npos) << again.out;
    ASSERT_TRUE(poll_until([&] { return finished(); }, 240s)) << rollout_logs();
    client.stop();
    std::cerr << "[ timing ] good upgrade of 3 hosts: " << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s\n";

    auto v = rollout();
    ASSERT_TRUE(v);
    EXPECT_EQ(v->rollout.state, "done") << rollout_logs();
    EXPECT_EQ(v->rollout.cohorts.front(), std::vector<std::string>{"c"}) << "the canary is the host whose models live elsewhere too";
    for (const char * id : {"a", "b", "c"}) {
        EXPECT_EQ(v->progress[id].step, "done") << id;
        expect_on_new_version(id);
        // The host record reports what the server runs, and the packed binary says what it was packed as.
        EXPECT_TRUE(poll_until([&] { auto r = record(id); return r && r->version == good_version; }, 30s)) << id << " reports " << record(id)->version;
        http::client_request metadata;
        metadata.url = record(id)->openai_url + "/v1/metadata";
        auto packed = http::call(metadata);
        ASSERT_TRUE(packed.ok());
        EXPECT_EQ(json::parse(packed->body).value("version", ""), good_version) << id;
    }
    {
        const auto bin = data("a") / "versions" / good_version / "bin" / "rustycage";
        const auto version = run_command({bin.string(), "version", "--no-devices"});
        EXPECT_EQ(version.out.rfind("rustycage " + good_version + " ", 0), 0u) << version.out << version.err;
    }
    EXPECT_EQ(client.failed, 0) << "a request failed on every up host";
    EXPECT_EQ(client.both_down, 0) << "duo's two hosts were down at once";
    EXPECT_GT(client.served, 10);
    auto status = run_rustycage({"fleet", "rollout", "status", "--json", "--etcd", cluster->endpoints()});
    ASSERT_EQ(status.code, 0) << status.out;
    auto j = json::parse(status.out);
    EXPECT_EQ(j["state"], "done");
    EXPECT_EQ(j["done"], 3);
    EXPECT_EQ(j["total"], 3);
    EXPECT_TRUE(incidents_json(cluster->endpoints()).empty()) << "a planned cutover is no crash";

    // The web console of a host on the new version shows the finished rollout.
    auto console_rollout = [&]() -> json {
        http::client_request req;
        req.url = record("a")->openai_url + "/v1/console/fleet";
        auto reply = http::call(req);
        if (!reply || !reply->ok()) return nullptr;
        auto doc = json::parse(reply->body);
        return doc.contains("rollouts") && !doc["rollouts"].empty() ? doc["rollouts"][0] : json(nullptr);
    };
    ASSERT_TRUE(poll_until([&] { return console_rollout().is_object(); }, 30s)) << logs();
    const json shown = console_rollout();
    EXPECT_EQ(shown["id"], j["id"]);
    EXPECT_EQ(shown["state"], "done");
    EXPECT_EQ(shown["done"], 3);
}

// No decision compares one host's wall clock with another's (docs/FLEET.md "Time"): with a an hour
// ahead and b an hour behind, and b's agent down for 7 s in the middle of its step, the rollout
// runs to done under the default --host-timeout.
TEST_F(fleet_rollout, hosts_an_hour_off_either_way_and_a_short_outage_do_not_halt_a_rollout) {
    REQUIRE_ETCD();
    const std::string lib = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";
    if (access(lib.c_str(), R_OK) != 0) GTEST_FAIL() << "no libfaketime: scripts/setup.sh installs faketime";
    auto skew = [&](const std::string & offset) {
        return std::vector<std::string>{"LD_PRELOAD=" + lib, "FAKETIME=" + offset, "DONT_FAKE_MONOTONIC=1"};
    };
    start_fleet({}, {}, {{"a", skew("+1h")}, {"b", skew("-1h")}});
    auto ra = record("a"), rc_ = record("c");
    ASSERT_TRUE(ra && rc_);
    EXPECT_GT(ra->updated_at, rc_->updated_at) << "a's clock is ahead (the skew took effect)";

    auto up = upgrade("good", sha("good"), {"--cohort-size", "2"});
    ASSERT_EQ(up.code, 0) << up.out;
    // b has written a step (stamped an hour behind): its agent and server die, and come back 7 s later.
    ASSERT_TRUE(poll_until([&] { auto s = step("b"); return !s.empty() && s != "pending" && s != "done"; }, 240s)) << rollout_logs();
    agent("b").kill_agent(record("b")->server.pid);
    std::this_thread::sleep_for(7s);
    EXPECT_FALSE(finished()) << "the outage did not halt the rollout: " << rollout_logs();
    agent("b").start();
    ASSERT_TRUE(poll_until([&] { return finished(); }, 240s)) << rollout_logs();
    auto v = rollout();
    ASSERT_TRUE(v);
    EXPECT_EQ(v->rollout.state, "done") << v->rollout.message << "\n" << rollout_logs();
    for (const char * id : {"a", "b", "c"}) EXPECT_EQ(v->progress[id].step, "done") << id;
}

// Whoever can write a rollout cannot make a host run a build: the signature is checked against each
// host's own trusted keys before anything is unpacked.
TEST_F(fleet_rollout, an_artifact_signed_by_an_untrusted_key_or_unsigned_is_refused_before_unpacking) {
    REQUIRE_ETCD();
    start_fleet();
    std::map<std::string, int> pids;
    for (const char * id : {"a", "b", "c"}) pids[id] = record(id)->server.pid;
    const std::string stranger = std::string(RC_ROLLOUT_ARTIFACTS) + "/good.tar.gz.stranger.sig";
    const std::string missing = std::string(RC_ROLLOUT_ARTIFACTS) + "/no-such.sig";
    int refusals = 0;
    for (const auto & [sig, why] : {std::pair{stranger, std::string("which is not among this host's trusted keys")},
                                    std::pair{missing, std::string("cannot be read")}}) {
        auto up = upgrade("good", sha("good"), {"--signature", sig});
        ASSERT_EQ(up.code, 0) << up.out;
        // This rollout by its id: "the newest" cannot tell two rollouts of the same second apart.
        const size_t at = up.out.find("rollout ro-");
        ASSERT_NE(at, std::string::npos) << up.out;
        const std::string rollout_id = up.out.substr(at + 8, up.out.find_first_of(" \n", at + 8) - (at + 8));
        auto this_one = [&] {
            auto r = fleet::read_rollout(*etcd, keys, rollout_id);
            return r.ok() ? std::optional<fleet::rollout_view>(r.value()) : std::nullopt;
        };
        ASSERT_TRUE(poll_until([&] { auto r = this_one(); return r && r->rollout.finished(); }, 120s)) << rollout_logs();
        auto v = this_one();
        EXPECT_EQ(v->rollout.state, "failed");
        EXPECT_NE(v->rollout.message.find(why), std::string::npos) << v->rollout.message;
        EXPECT_NE(v->rollout.message.find("nothing was unpacked"), std::string::npos) << v->rollout.message;
        ++refusals;
        for (const char * id : {"a", "b", "c"}) {
            EXPECT_FALSE(fs::exists(data(id) / "versions")) << id << ": nothing unpacked, so nothing from it can run";
            EXPECT_FALSE(fs::exists(data(id) / "downloads" / (sha("good") + ".tar.gz"))) << id << ": the download is deleted";
            EXPECT_EQ(record(id)->server.pid, pids[id]) << id << " still serves on its old server";
            EXPECT_TRUE(ready(id)) << id;
        }
        auto incs = incidents_json(cluster->endpoints(), true);
        ASSERT_TRUE(poll_until([&] { incs = incidents_json(cluster->endpoints(), true); return int(incs.size()) >= refusals; }, 30s));
        EXPECT_EQ(int(incs.size()), refusals) << "one incident per refused rollout: " << incs.dump(2);
        EXPECT_EQ(incs[0]["kind"], "rollout_refused");
    }
    // The same artifact with the lab's signature beside it goes through.
    auto up = upgrade("good", sha("good"), {"--cohort-size", "2"});
    ASSERT_EQ(up.code, 0) << up.out;
    ASSERT_TRUE(poll_until([&] { return finished(); }, 240s)) << rollout_logs();
    EXPECT_EQ(rollout()->rollout.state, "done") << rollout_logs();
    for (const char * id : {"a", "b", "c"}) EXPECT_NE(agent(id).log().find("event=artifact_verified"), std::string::npos) << id;
}

TEST_F(fleet_rollout, a_bad_build_fails_the_canary_halts_the_rollout_and_files_one_issue) {
    REQUIRE_ETCD();
    fake_github gh;
    start_fleet({"--github-repo", "acme/lab", "--github-backoff", "300ms", "--filing-grace", "6s"},
                {"GITHUB_API_URL=" + gh.url(), "GITHUB_TOKEN=t"});
    std::map<std::string, int> pids;
    for (const char * id : {"a", "b", "c"}) pids[id] = record(id)->server.pid;
    const std::string self_exe = server_exe("c");
    const auto t0 = std::chrono::steady_clock::now();
    auto up = upgrade("bad", sha("bad"));
    ASSERT_EQ(up.code, 0) << up.out;
    ASSERT_TRUE(poll_until([&] { return finished(); }, 120s)) << rollout_logs();
    std::cerr << "[ timing ] bad build caught: " << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s\n";
    auto v = rollout();
    EXPECT_EQ(v->rollout.state, "failed");
    EXPECT_NE(v->rollout.message.find("host c"), std::string::npos) << v->rollout.message;
    EXPECT_NE(v->rollout.message.find("smoke test"), std::string::npos) << v->rollout.message;
    EXPECT_EQ(v->progress["c"].step, "failed");
    // The canary serves on its old version; the others were never touched.
    EXPECT_TRUE(ready("c"));
    EXPECT_EQ(server_exe("c"), self_exe);
    EXPECT_EQ(current("c"), "");
    EXPECT_TRUE(serves(record("c")->openai_url));
    for (const char * id : {"a", "b"}) {
        EXPECT_EQ(v->progress.count(id), 0u) << id << " was touched";
        EXPECT_EQ(record(id)->server.pid, pids[id]) << id << " was restarted";
        EXPECT_FALSE(fs::exists(data(id) / "versions")) << id;
    }
    // One incident, one issue.
    ASSERT_TRUE(poll_until([&] { return gh.issues().size() == 1; }, 60s)) << logs();
    auto incs = incidents_json(cluster->endpoints(), true);
    ASSERT_EQ(incs.size(), 1u) << incs.dump(2);
    EXPECT_EQ(incs[0]["kind"], "smoke_test_failed");
    EXPECT_EQ(incs[0]["host"], "c");
    ASSERT_TRUE(poll_until([&] {
        auto all = incidents_json(cluster->endpoints(), true);
        return all.size() == 1 && all[0].contains("outbox") && all[0]["outbox"].value("state", "") == "done";
    }, 60s));
    EXPECT_EQ(gh.issues().size(), 1u);
    EXPECT_NE(gh.issues()[0].body.find("smoke_test_failed"), std::string::npos);
}

TEST_F(fleet_rollout, a_wrong_sha256_is_refused_before_anything_is_unpacked) {
    REQUIRE_ETCD();
    start_fleet();
    std::string wrong = sha("good");
    wrong[0] = wrong[0] == '0' ? '1' : '0';
    auto up = upgrade("good", wrong);
    ASSERT_EQ(up.code, 0) << up.out;
    ASSERT_TRUE(poll_until([&] { return finished(); }, 60s)) << rollout_logs();
    auto v = rollout();
    EXPECT_EQ(v->rollout.state, "failed");
    EXPECT_NE(v->rollout.message.find("sha256 mismatch"), std::string::npos) << v->rollout.message;
    EXPECT_EQ(v->progress["c"].step, "failed");
    EXPECT_FALSE(fs::exists(data("c") / "versions")) << "nothing was unpacked";
    std::error_code ec;
    for (const auto & e : fs::directory_iterator(data("c") / "downloads", ec)) ADD_FAILURE() << "left behind: " << e.path();
    for (const char * id : {"a", "b"}) EXPECT_EQ(v->progress.count(id), 0u) << id;
    EXPECT_TRUE(ready("c"));
    // Bad input to the CLI changes nothing.
    auto bad = run_rustycage({"fleet", "upgrade", "--etcd", cluster->endpoints(), "--to", "../x", "--artifact", artifact("good"), "--sha256", sha("good")});
    EXPECT_NE(bad.code, 0);
    bad = run_rustycage({"fleet", "upgrade", "--etcd", cluster->endpoints(), "--to", "1.0", "--artifact", artifact("good"), "--sha256", "abc"});
    EXPECT_NE(bad.code, 0);
    EXPECT_EQ(fleet::read_rollouts(*etcd, keys).value().size(), 1u);
}

TEST_F(fleet_rollout, the_driver_killed_mid_rollout_is_replaced_and_the_rollout_finishes) {
    REQUIRE_ETCD();
    start_fleet();
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(upgrade("good", sha("good")).code, 0);
    ASSERT_TRUE(poll_until([&] { return step("c") == "done"; }, 120s)) << rollout_logs();
    const std::string driver = rollout()->rollout.driver;
    ASSERT_FALSE(driver.empty());
    agent(driver).kill_agent(record(driver) ? record(driver)->server.pid : 0);
    ASSERT_TRUE(poll_until([&] {
        auto v = rollout();
        return v && !v->rollout.driver.empty() && v->rollout.driver != driver;
    }, 30s)) << "no other agent took over driving; " << rollout_logs();
    agent(driver).start();  // the host comes back (on whatever its current link says) and takes its turn
    ASSERT_TRUE(poll_until([&] { return finished(); }, 240s)) << rollout_logs();
    std::cerr << "[ timing ] rollout with its driver killed: " << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s\n";
    EXPECT_EQ(rollout()->rollout.state, "done") << rollout_logs();
    for (const char * id : {"a", "b", "c"}) expect_on_new_version(id);
}

TEST_F(fleet_rollout, a_host_killed_during_its_cutover_comes_back_serving_and_the_rollout_ends) {
    REQUIRE_ETCD();
    start_fleet();
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(upgrade("good", sha("good")).code, 0);
    std::string victim;
    ASSERT_TRUE(poll_until([&] {
        for (const char * id : {"a", "b", "c"})
            if (step(id) == "cutover") victim = id;
        return !victim.empty();
    }, 120s)) << rollout_logs();
    agent(victim).kill_agent(record(victim) ? record(victim)->server.pid : 0);
    agent(victim).start();
    ASSERT_TRUE(poll_until([&] { return ready(victim); }, 60s)) << victim << " did not come back serving; " << logs();
    ASSERT_TRUE(poll_until([&] { return finished(); }, 240s)) << "the rollout hangs; " << rollout_logs();
    std::cerr << "[ timing ] rollout with a host killed in cutover: " << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s\n";
    auto v = rollout();
    if (v->rollout.state == "done") {
        for (const char * id : {"a", "b", "c"}) expect_on_new_version(id);
    } else {
        EXPECT_EQ(v->rollout.state, "failed");
        EXPECT_FALSE(v->rollout.message.empty()) << "a halt says why";
    }
    EXPECT_TRUE(poll_until([&] { return ready(victim) && serves(record(victim)->openai_url); }, 30s));
    EXPECT_GE(v->progress[victim].attempts, 2) << "the host's second life accounted for the first";
}

}  // namespace
}  // namespace rc::test
