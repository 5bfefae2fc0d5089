// The fleet on etcd with TLS (client certificates) and authentication on, set up by
// scripts/fleet-etcd-setup.sh on a real 3-member cluster with certificates made here by openssl:
// each identity can do what its role allows and no more; an agent, its server's console, the CLI and
// the gateway work with credentials; a client without them is refused and writes nothing.
#include <cstdlib>
#include <fstream>

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
    std::string password_file(const std::string & user) {
        const auto p = pki->dir() / (user + ".pw");
        std::ofstream(p) << "pw-of-" << user << "-42\n";
        return p.string();
    }
    fleet::etcd_options as(const std::string & user, bool with_password = true) {
        fleet::etcd_options o;
        o.endpoints = cluster->endpoint_list();
        o.ca_file = pki->ca().string();
        o.cert_file = pki->cert(user).string();
        o.key_file = pki->key(user).string();
        if (with_password) {
            o.user = user;
            o.password = "pw-of-" + user + "-42";
        }
        return o;
    }
    // The agent flags of one identity.
    std::vector<std::string> creds(const std::string & user) {
        return {"--etcd-cacert", pki->ca().string(), "--etcd-cert", pki->cert(user).string(), "--etcd-key", pki->key(user).string(),
                "--etcd-user", user, "--etcd-password-file", (pki->dir() / (user + ".pw")).string()};
    }

    std::unique_ptr<temp_dir> certs;
    std::unique_ptr<test_pki> pki;
    std::unique_ptr<gateway::gateway_server> gw;
};

TEST_F(fleet_trust, roles_allow_each_identity_its_own_keys_and_every_component_works_with_credentials) {
    REQUIRE_ETCD();
    if (std::system("command -v etcdctl >/dev/null && command -v openssl >/dev/null") != 0)
        GTEST_FAIL() << "etcdctl and openssl are needed: scripts/setup.sh installs etcd-client";
    certs = std::make_unique<temp_dir>("pki");
    pki = std::make_unique<test_pki>(certs->path());
    ASSERT_TRUE(pki->ok());
    for (const char * u : {"root", "a", "b", "viewer", "ops"}) ASSERT_TRUE(pki->client(u)) << u;
    cluster = std::make_unique<etcd_cluster>(3, pki.get(), "root");
    ASSERT_TRUE(cluster->wait_healthy()) << "etcd did not come up over TLS; logs in " << cluster->dir();

    // The documented setup: auth on, roles and users.
    const std::string setup = std::string(RC_SOURCE_DIR) + "/scripts/fleet-etcd-setup.sh --endpoints " + cluster->endpoints() + " --cacert " +
                              pki->ca().string() + " --cert " + pki->cert("root").string() + " --key " + pki->key("root").string() +
                              " --root-password-file " + password_file("root") + " --agent a:" + password_file("a") + " --agent b:" +
                              password_file("b") + " --viewer viewer:" + password_file("viewer") + " --operator ops:" + password_file("ops");
    ASSERT_EQ(std::system((setup + " >" + (pki->dir() / "setup.log").string() + " 2>&1").c_str()), 0) << slurp(pki->dir() / "setup.log");
    ASSERT_EQ(std::system((setup + " >/dev/null 2>&1").c_str()), 0) << "a second run changes nothing and succeeds";

    fleet::etcd_gateway agent_a(as("a")), viewer(as("viewer")), ops(as("ops")), admin(as("root"));
    // An agent writes its own record, not another host's roster entry or record, nor the schema or
    // the active rollout (rollouts/ it may write: the elected driver records its decisions there).
    {
        auto mine = agent_a.put(keys.host("a"), "{}");
        EXPECT_TRUE(mine.ok()) << mine.err().message;
    }
    auto other = agent_a.put(keys.host("b"), R"({"id":"b"})");
    ASSERT_FALSE(other.ok());
    EXPECT_EQ(other.err().code, errc::permission_denied) << other.err().message;
    EXPECT_EQ(agent_a.put(keys.roster_entry("b"), "{}").err().code, errc::permission_denied);
    EXPECT_EQ(agent_a.put(keys.schema(), "2").err().code, errc::permission_denied);
    EXPECT_EQ(agent_a.put(keys.rollout_active(), "ro-x").err().code, errc::permission_denied);
    // The viewer reads and writes nothing; the operator writes rollouts and incidents, not hosts.
    EXPECT_TRUE(viewer.get_prefix(keys.prefix).ok());
    EXPECT_EQ(viewer.put(keys.host("x"), "{}").err().code, errc::permission_denied);
    EXPECT_TRUE(ops.put(keys.rollout_active(), "ro-test").ok());
    EXPECT_TRUE(ops.del(keys.rollout_active()).ok());
    EXPECT_EQ(ops.put(keys.host("fake"), "{}").err().code, errc::permission_denied);
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

    // A real agent on TLS with its credentials registers; the CLI, its server's console and the
    // gateway read the fleet with theirs.
    agents.push_back(std::make_unique<agent_process>(root.path(), agent_config{"a", cluster->endpoints(), creds("a"), {}}));
    etcd = std::make_unique<fleet::etcd_gateway>(as("viewer"));
    ASSERT_TRUE(eventually([&] { return ready("a"); }, 120s)) << logs();
    auto status = run_rustycage([&] {
        std::vector<std::string> args = {"fleet", "status", "--json", "--etcd", cluster->endpoints()};
        for (auto & c : creds("viewer")) args.push_back(c);
        return args;
    }());
    ASSERT_EQ(status.code, 0) << status.out;
    EXPECT_NE(status.out.find("\"id\": \"a\""), std::string::npos) << status.out;
    auto plain = run_rustycage({"fleet", "status", "--etcd", cluster->endpoints(), "--etcd-cacert", pki->ca().string()});
    EXPECT_NE(plain.code, 0) << "no client certificate, no fleet: " << plain.out;
    fleet::http_request console;
    console.url = record("a")->openai_url + "/v1/console/fleet";
    ASSERT_TRUE(eventually([&] {
        auto r = fleet::http_call(console);
        return r.ok() && r->ok() && r->body.find("\"id\":\"a\"") != std::string::npos;
    }, 30s)) << "the console reads the fleet with the agent's credentials";

    gw = std::make_unique<gateway::gateway_server>(*etcd, keys, gateway::gateway_options{}, 30s);
    gateway::gateway_listen listen;
    listen.openai_port = 0;
    listen.ollama_port = 0;
    ASSERT_TRUE(gw->start(listen).ok());
    ASSERT_TRUE(eventually([&] { return gw->context().hosts.state_of("a") == "up"; }, 30s)) << gw->context().hosts.to_json().dump();
    EXPECT_TRUE(serves("http://127.0.0.1:" + std::to_string(gw->openai_port()))) << "a request through the gateway";

    // etcd restarts: the tokens it gave are void; every client buys a new one by itself.
    const int64_t rev = etcd->get(keys.host("a"))->kvs.at(0).mod_revision;
    for (size_t i = 0; i < cluster->size(); ++i) cluster->kill_member(i);
    for (size_t i = 0; i < cluster->size(); ++i) cluster->restart_member(i);
    ASSERT_TRUE(eventually([&] {
        auto r = etcd->get(keys.host("a"));
        return r.ok() && !r->kvs.empty() && r->kvs[0].mod_revision > rev;
    }, 60s)) << "the viewer reads again and the agent writes its record again\n" << logs();
    EXPECT_TRUE(ops.put(keys.rollout_active(), "ro-after").ok());
}

}  // namespace
}  // namespace rc::test
