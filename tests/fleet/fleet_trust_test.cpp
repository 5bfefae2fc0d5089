// The fleet on etcd with TLS (client certificates) and authentication on, set up by
// scripts/fleet-etcd-setup.sh on a real 3-member cluster with certificates made here by openssl:
// each identity can do what its role allows and no more; an agent, its server's console, the CLI and
// the gateway work with credentials; a client without them is refused and writes nothing.
#include <signal.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "fake_github.h"
#include "fleet_test_fixture.h"
#include "gateway/gateway_server.h"

namespace rc::test {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

class fleet_trust : public fleet_fixture {
  protected:
    void TearDown() override {
        if (gw) gw->stop();
    }
    std::unique_ptr<gateway::gateway_server> gw;
};

TEST_F(fleet_trust, roles_allow_each_identity_its_own_keys_and_every_component_works_with_credentials) {
    REQUIRE_ETCD();
    ASSERT_NO_FATAL_FAILURE(start_cluster(3, {}, false));
    if (HasFatalFailure()) return;

    // The documented setup: auth on, roles and users; a second run changes nothing and succeeds.
    const std::string log = (pki->dir() / "setup.log").string();
    const std::vector<std::string> setup_args = {"--agent", "a:" + password_file("a"), "--agent", "b:" + password_file("b")};
    ASSERT_EQ(run_setup(setup_args, log), 0) << slurp(log);
    ASSERT_EQ(run_setup(setup_args, log), 0) << slurp(log);

    fleet::etcd_gateway agent_a(as("a")), viewer(as("viewer")), ops(as("ops")), admin(as("root"));
    // An agent writes what is its own and the driver's plan; nothing of another host's, and never a
    // rollout (which names what hosts run), the active rollout or the schema.
    for (const std::string & key : {keys.host("a"), keys.roster_entry("a"), keys.health_entry("b", "a"), keys.incident("a", "inc-1"),
                                    keys.outbox_entry("a", "inc-1"), keys.rollout_host("ro-1", "a"), keys.rollout_state("ro-1")}) {
        auto mine = agent_a.put(key, "{}");
        EXPECT_TRUE(mine.ok()) << key << ": " << mine.err().message;
    }
    auto other = agent_a.put(keys.host("b"), R"({"id":"b"})");
    ASSERT_FALSE(other.ok());
    EXPECT_EQ(other.err().code, errc::permission_denied) << other.err().message;
    for (const std::string & key : {keys.roster_entry("b"), keys.health_entry("a", "b"), keys.incident("b", "inc-2"), keys.outbox_entry("b", "inc-2"),
                                    keys.rollout_host("ro-1", "b"), keys.rollout("ro-1"), keys.rollout_active(), keys.schema(), keys.issue("fp-1")})
        EXPECT_EQ(agent_a.put(key, "{}").err().code, errc::permission_denied) << key;
    // The viewer reads and writes nothing; the operator writes rollouts and incidents, not hosts.
    EXPECT_TRUE(viewer.get_prefix(keys.prefix).ok());
    EXPECT_EQ(viewer.put(keys.host("x"), "{}").err().code, errc::permission_denied);
    EXPECT_TRUE(ops.put(keys.rollout("ro-test"), "{}").ok());
    EXPECT_TRUE(ops.put(keys.rollout_active(), "ro-test").ok());
    EXPECT_TRUE(ops.del(keys.rollout_active()).ok());
    EXPECT_EQ(ops.put(keys.host("fake"), "{}").err().code, errc::permission_denied);
    EXPECT_EQ(ops.put(keys.rollout_host("ro-1", "a"), "{}").err().code, errc::permission_denied) << "a host's progress is its own";
    // No certificate: refused at the handshake. A wrong password: refused, saying whose.
    auto no_cert = as("viewer");
    no_cert.cert_file.clear();
    no_cert.key_file.clear();
    EXPECT_FALSE(fleet::etcd_gateway(no_cert).put(keys.host("x"), "{}").ok());
    auto wrong = as("a");
    wrong.password = "guess";
    auto refused = fleet::etcd_gateway(wrong).put(keys.host("a"), "{}");
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.err().code, errc::unauthenticated);
    EXPECT_NE(refused.err().message.find("etcd refused user 'a'"), std::string::npos) << refused.err().message;
    EXPECT_TRUE(admin.get(keys.host("x"))->kvs.empty()) << "nothing was written";
    ASSERT_TRUE(admin.del(keys.host("a")).ok());

    // A quiet watch under auth is not taken for a hung member. The member check reads a key outside
    // the fleet's prefix, which the viewer's role refuses; etcd's refusal still proves its member
    // answers (it was read as "hung": every silent stream churned from member to member).
    {
        auto quiet_opts = as("viewer");
        quiet_opts.stream_idle = 300ms;
        fleet::etcd_gateway quiet(quiet_opts);
        const int64_t from = quiet.get_prefix(keys.prefix)->revision + 1;
        std::atomic<bool> stop{false}, returned{false};
        std::string why;
        std::thread t([&] {
            auto end = quiet.watch(keys.prefix + "quiet/", from, [](const std::vector<fleet::etcd_event> &, int64_t) {}, [&] { return stop.load(); });
            if (!end.ok()) why = end.err().message;
            returned = true;
        });
        const bool abandoned = poll_until([&] { return returned.load(); }, 3s);
        stop = true;
        t.join();
        EXPECT_FALSE(abandoned) << "a silent watch under auth ended after 300 ms idle checks: " << why;
    }

    // A real agent on TLS with its credentials registers; the CLI, its server's console and the
    // gateway read the fleet with theirs.
    agents.push_back(std::make_unique<agent_process>(root.path(), agent_config{"a", cluster->endpoints(), creds("a"), {}}));
    etcd = std::make_unique<fleet::etcd_gateway>(as("viewer"));
    ASSERT_TRUE(poll_until([&] { return ready("a"); }, 120s)) << logs();
    auto status = run_rustycage([&] {
        std::vector<std::string> args = {"fleet", "status", "--json", "--etcd", cluster->endpoints()};
        for (auto & c : creds("viewer")) args.push_back(c);
        return args;
    }());
    ASSERT_EQ(status.code, 0) << status.out;
    EXPECT_NE(status.out.find("\"id\": \"a\""), std::string::npos) << status.out;
    auto plain = run_rustycage({"fleet", "status", "--etcd", cluster->endpoints(), "--etcd-cacert", pki->ca().string()});
    EXPECT_NE(plain.code, 0) << "no client certificate, no fleet: " << plain.out;
    http::client_request console;
    console.url = record("a")->openai_url + "/v1/console/fleet";
    ASSERT_TRUE(poll_until([&] {
        auto r = http::call(console);
        return r.ok() && r->ok() && r->body.find("\"id\":\"a\"") != std::string::npos;
    }, 30s)) << "the console reads the fleet with the agent's credentials";

    gw = std::make_unique<gateway::gateway_server>(*etcd, keys, gateway::gateway_options{}, 30s);
    gateway::gateway_listen listen;
    listen.openai_port = 0;
    listen.ollama_port = 0;
    ASSERT_TRUE(gw->start(listen).ok());
    ASSERT_TRUE(poll_until([&] { return gw->context().hosts.state_of("a") == "up"; }, 30s)) << gw->context().hosts.to_json().dump();
    EXPECT_TRUE(serves("http://127.0.0.1:" + std::to_string(gw->openai_port()))) << "a request through the gateway";

    // etcd restarts: the tokens it gave are void; every client buys a new one by itself.
    const int64_t rev = etcd->get(keys.host("a"))->kvs.at(0).mod_revision;
    for (size_t i = 0; i < cluster->size(); ++i) cluster->kill_member(i);
    for (size_t i = 0; i < cluster->size(); ++i) cluster->restart_member(i);
    ASSERT_TRUE(poll_until([&] {
        auto r = etcd->get(keys.host("a"));
        return r.ok() && !r->kvs.empty() && r->kvs[0].mod_revision > rev;
    }, 60s)) << "the viewer reads again and the agent writes its record again\n" << logs();
    EXPECT_TRUE(ops.put(keys.rollout_active(), "ro-after").ok());
}

// Every secret set at once — the server's API key, the GitHub token, the Hugging Face token, the
// agent's etcd password, a private key — and a server whose output spills them all, then crashes
// (an incident with its log tail, triaged and filed): none of them is in etcd, `fleet status`,
// `incidents list`, the console's fleet page, the issue filed or the agent's log.
TEST_F(fleet_trust, no_secret_reaches_a_record_an_incident_an_issue_a_page_or_a_log) {
    REQUIRE_ETCD();
    ASSERT_NO_FATAL_FAILURE(start_cluster(3, {"a"}));
    if (HasFatalFailure()) return;

    const std::string api_key = "ak-Sekret-7f3a9c1e55", gh_token = "ghp_" + std::string("Q7w8E9r0T1y2U3i4O5p6A7s8D9f0G1h2J3k4"),
                      hf_token = "hf_" + std::string("ZxCvBnMaSdFgHjKlQwErTyUiOp12"), etcd_password = "pw-of-a-42",
                      key_line = "MC4CAQAwBQYDK2VwBCIEIHq9x8KprivatekeyBODY0123456789";
    // The host runs an installed "release" whose server prints every secret before serving.
    const auto version_dir = root.path() / "a" / "data" / "versions" / "9.9.9";
    std::filesystem::create_directories(version_dir / "bin");
    {
        std::ofstream w(version_dir / "bin" / "rustycage");
        w << "#!/bin/sh\n"
          << "echo 'debug: Authorization: Bearer " << api_key << "'\n"
          << "echo 'env GITHUB_TOKEN=" << gh_token << " HF_TOKEN=" << hf_token << " etcd password: " << etcd_password << "'\n"
          << "echo '-----BEGIN PRIVATE KEY-----'; echo '" << key_line << "'; echo '-----END PRIVATE KEY-----'\n"
          << "exec '" << RC_RUSTYCAGE_BIN << "' \"$@\"\n";
    }
    std::filesystem::permissions(version_dir / "bin" / "rustycage", std::filesystem::perms::owner_all);
    std::filesystem::create_directory_symlink("9.9.9", root.path() / "a" / "data" / "versions" / "current");

    fake_github gh;
    auto args = creds("a");
    args.insert(args.end(), {"--api-key", api_key, "--github-repo", "acme/lab", "--github-backoff", "300ms", "--filing-grace", "2s"});
    agents.push_back(std::make_unique<agent_process>(root.path(), agent_config{"a", cluster->endpoints(), args,
                                                                               {"GITHUB_TOKEN=" + gh_token, "GITHUB_API_URL=" + gh.url(), "HF_TOKEN=" + hf_token}}));
    fleet::etcd_gateway admin(as("root"));
    etcd = std::make_unique<fleet::etcd_gateway>(as("viewer"));
    ASSERT_TRUE(poll_until([&] { return ready("a"); }, 120s)) << logs();
    ASSERT_NE(agents[0]->log().find("[redacted]"), std::string::npos) << "the server's output went through the agent";
    // The server crashes: an incident with its log tail, filed as an issue.
    ASSERT_EQ(::kill(record("a")->server.pid, SIGKILL), 0);
    ASSERT_TRUE(poll_until([&] { return gh.issues().size() == 1; }, 90s)) << logs();
    ASSERT_TRUE(poll_until([&] { return ready("a"); }, 60s)) << logs();

    std::vector<std::pair<std::string, std::string>> seen;  // where, text
    auto all = admin.get_prefix(keys.prefix);
    ASSERT_TRUE(all.ok()) << all.err().message;
    for (const auto & kv : all->kvs) seen.emplace_back("etcd " + kv.key, kv.value);
    auto with = [&](std::vector<std::string> a) {
        a.insert(a.end(), {"--etcd", cluster->endpoints()});
        for (auto & c : creds("viewer")) a.push_back(c);
        return a;
    };
    auto status = run_rustycage(with({"fleet", "status", "--json"}));
    ASSERT_EQ(status.code, 0) << status.out;
    seen.emplace_back("fleet status", status.out);
    auto incidents = run_rustycage(with({"incidents", "list", "--json", "--all"}));
    ASSERT_EQ(incidents.code, 0) << incidents.out;
    ASSERT_NE(incidents.out.find("server_crash"), std::string::npos) << incidents.out;
    seen.emplace_back("incidents list", incidents.out);
    http::client_request console;
    console.url = record("a")->openai_url + "/v1/console/fleet";
    console.headers = {"Authorization: Bearer " + api_key};
    auto page = http::call(console);
    ASSERT_TRUE(page.ok() && page->ok());
    seen.emplace_back("console", page->body);
    for (const auto & i : gh.issues()) {
        seen.emplace_back("issue", i.title + "\n" + i.body);
        for (const auto & c : i.comments) seen.emplace_back("issue comment", c);
    }
    seen.emplace_back("agent log", agents[0]->log());
    bool evidence = false;
    for (const auto & [where, text] : seen) {
        evidence = evidence || (where.starts_with("etcd") && text.find("Authorization: Bearer [redacted]") != std::string::npos);
        for (const auto & secret : {api_key, gh_token, hf_token, etcd_password, key_line})
            EXPECT_EQ(text.find(secret), std::string::npos) << where << " holds a secret (" << secret.substr(0, 6) << "…)";
    }
    EXPECT_TRUE(evidence) << "the incident kept the log tail, scrubbed";
}

// Every process below `root` (its children, theirs, …), from /proc.
std::vector<int> descendants(int root) {
    std::map<int, std::vector<int>> children;
    for (const auto & e : std::filesystem::directory_iterator("/proc")) {
        const std::string name = e.path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
        const std::string stat = slurp(e.path() / "stat");  // "pid (comm) state ppid …": comm may hold anything
        const size_t close = stat.rfind(')');
        if (close == std::string::npos) continue;
        std::istringstream rest(stat.substr(close + 1));
        std::string state;
        int ppid = 0;
        if (rest >> state >> ppid) children[ppid].push_back(std::stoi(name));
    }
    std::vector<int> out, todo = {root};
    while (!todo.empty()) {
        const int pid = todo.back();
        todo.pop_back();
        for (int child : children[pid]) {
            out.push_back(child);
            todo.push_back(child);
        }
    }
    return out;
}

// Issue 59: the agent's secrets — GITHUB_TOKEN, HF_TOKEN, RUSTYCAGE_API_KEYS in its environment, API
// keys on its command line and in its key file — reach neither the environment nor the command line
// of anything it starts (/proc/<pid>/environ is readable by whatever a rollout installs as the
// server, cmdline by every local user), while its server still requires every one of the keys.
TEST_F(fleet_trust, no_secret_reaches_the_environment_or_argv_of_what_an_agent_starts) {
    REQUIRE_ETCD();
    ASSERT_NO_FATAL_FAILURE(start_cluster(1, {"a"}));
    if (HasFatalFailure()) return;

    const std::string gh_token = "ghp_" + std::string("Z9x8C7v6B5n4M3a2S1d0F9g8H7j6K5l4"), hf_token = "hf_" + std::string("PoIuYtReWqLkJhGfDsA98"),
                      env_key = "ak-env-Sekret-4d2f81", flag_key = "ak-flag-Sekret-9b1e07", file_key = "ak-file-Sekret-3c7a55";
    const auto key_file = root.path() / "a-api-keys";
    std::ofstream(key_file) << "# the lab's clients\n" << file_key << "\n";
    std::filesystem::permissions(key_file, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    auto & a = add_agent("a", {"--api-key", flag_key, "--api-key-file", key_file.string()},
                         {"GITHUB_TOKEN=" + gh_token, "HF_TOKEN=" + hf_token, "RUSTYCAGE_API_KEYS=" + env_key, "TZ=UTC"});
    ASSERT_TRUE(poll_until([&] { return ready("a"); }, 120s)) << logs();

    const int server = record("a")->server.pid;
    const std::vector<int> started = descendants(a.pid());
    ASSERT_NE(std::find(started.begin(), started.end(), server), started.end()) << "the server is the agent's child";
    for (const int pid : started) {
        const std::string proc = "/proc/" + std::to_string(pid);
        const std::string environ_text = slurp(proc + "/environ"), cmdline = slurp(proc + "/cmdline");
        ASSERT_FALSE(environ_text.empty()) << proc << "/environ could not be read";
        for (const auto & secret : {gh_token, hf_token, env_key, flag_key, file_key}) {
            EXPECT_EQ(environ_text.find(secret), std::string::npos) << proc << "/environ holds " << secret.substr(0, 7) << "…";
            EXPECT_EQ(cmdline.find(secret), std::string::npos) << proc << "/cmdline holds " << secret.substr(0, 7) << "…";
        }
        EXPECT_EQ(environ_text.find("RUSTYCAGE_API_KEYS="), std::string::npos) << proc;
    }
    const std::string server_proc = "/proc/" + std::to_string(server);
    EXPECT_NE(slurp(server_proc + "/cmdline").find("--api-key-file"), std::string::npos) << "the keys go by file";
    EXPECT_NE(slurp(server_proc + "/environ").find("TZ=UTC"), std::string::npos) << "what a server needs still passes";

    // The server still requires a key, and takes each of the three.
    const std::string url = record("a")->openai_url;
    auto models_status = [&](const std::string & key) {
        http::client_request req;
        req.url = url + "/v1/models";
        if (!key.empty()) req.headers = {"Authorization: Bearer " + key};
        auto r = http::call(req);
        return r.ok() ? r->status : -1;
    };
    EXPECT_EQ(models_status(""), 401);
    EXPECT_EQ(models_status("ak-wrong"), 401);
    for (const auto & key : {flag_key, env_key, file_key}) EXPECT_EQ(models_status(key), 200) << key.substr(0, 7) << "…";

    // A clean stop leaves no key at rest in the data dir.
    EXPECT_EQ(a.stop(), 0) << logs();
    EXPECT_FALSE(std::filesystem::exists(a.dir() / "data" / "secrets" / "server-api-keys"));
}

}  // namespace
}  // namespace rc::test
