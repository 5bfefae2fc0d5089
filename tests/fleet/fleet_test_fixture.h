#pragma once
// What the agent tests share: a real etcd cluster run as a lab runs it — TLS with client
// certificates (made here with openssl) and authentication on, with the roles of
// scripts/fleet-etcd-setup.sh — agents in one temp root, and reads of the exact keys the fleet writes
// (host records, health entries, incidents, outbox).
//
// Identities: `root` is the test itself (it reads everything and writes the faults it stages);
// `ops` (operator) is the CLI, through RUSTYCAGE_ETCD_* in this process's environment; `viewer`;
// and one user per agent id the test names, each agent started with its own credentials.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent_process.h"
#include "etcd_cluster.h"
#include "etcd_tls.h"
#include "fleet/etcd/etcd_gateway.h"
#include "fleet/etcd/fleet_keys.h"
#include "fleet/host/host_record.h"
#include "http/http_client.h"

namespace rc::test {

#define REQUIRE_ETCD() \
    if (!etcd_cluster::available()) GTEST_SKIP() << "no etcd binary: scripts/setup.sh installs etcd-server"

class fleet_fixture : public ::testing::Test {
  protected:
    // `members` etcd members over TLS (call it inside ASSERT_NO_FATAL_FAILURE: a test must stop
    // when the cluster could not be made); with `auth`, authentication on and the roles of root, ops,
    // viewer and the agents `agent_ids` (each also a triager) made by the documented script (else
    // the test runs it itself). Every etcdctl call of the script costs: name only the agents used.
    void start_cluster(int members, const std::vector<std::string> & agent_ids = {"a", "b", "c"}, bool auth = true) {
        if (std::system("command -v etcdctl >/dev/null && command -v openssl >/dev/null") != 0)
            GTEST_FAIL() << "etcdctl and openssl are needed: scripts/setup.sh installs etcd-client";
        certs = std::make_unique<temp_dir>("pki");
        pki = std::make_unique<test_pki>(certs->path());
        ASSERT_TRUE(pki->ok() && pki->client("client")) << "openssl could not make the test certificates:\n" << pki->log();
        cluster = std::make_unique<etcd_cluster>(members, pki.get(), "client");
        etcd = std::make_unique<fleet::etcd_gateway>(cluster->client_options());  // before the check: a test that goes on after it fails must not crash
        ASSERT_TRUE(cluster->wait_healthy()) << "etcd did not come up over TLS; logs in " << cluster->dir();
        if (!auth) return;
        std::vector<std::string> agent_args;
        for (const auto & id : agent_ids) agent_args.insert(agent_args.end(), {"--agent", id + ":" + password_file(id), "--triager", id});
        const std::string log = (pki->dir() / "setup.log").string();
        ASSERT_EQ(run_setup(agent_args, log), 0) << slurp(log);
        cluster->authenticate_as("root", password("root"));
        etcd = std::make_unique<fleet::etcd_gateway>(as("root"));
        const std::pair<const char *, std::string> env[] = {{"RUSTYCAGE_ETCD_CACERT", pki->ca().string()},
                                                            {"RUSTYCAGE_ETCD_CERT", pki->cert("client").string()},
                                                            {"RUSTYCAGE_ETCD_KEY", pki->key("client").string()},
                                                            {"RUSTYCAGE_ETCD_USER", "ops"},
                                                            {"RUSTYCAGE_ETCD_PASSWORD_FILE", password_file("ops")}};
        for (const auto & [name, value] : env) ::setenv(name, value.c_str(), 1);
    }
    // scripts/fleet-etcd-setup.sh as root, with root, `ops` and `viewer` and `more` arguments; its exit status.
    int run_setup(const std::vector<std::string> & more, const std::string & log) {
        std::string cmd = std::string(RC_SOURCE_DIR) + "/scripts/fleet-etcd-setup.sh --endpoints " + cluster->endpoints() + " --cacert " +
                          pki->ca().string() + " --cert " + pki->cert("client").string() + " --key " + pki->key("client").string() +
                          " --root-password-file " + password_file("root") + " --operator ops:" + password_file("ops") + " --viewer viewer:" +
                          password_file("viewer");
        for (const auto & m : more) cmd += " '" + m + "'";
        const int st = std::system((cmd + " >" + log + " 2>&1").c_str());
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    }
    static std::string password(const std::string & user) { return "pw-of-" + user + "-42"; }
    std::string password_file(const std::string & user) {
        const auto p = pki->dir() / (user + ".pw");
        std::ofstream(p) << password(user) << "\n";
        return p.string();
    }
    // How `user` reaches etcd (the shared client certificate: the identity is the user).
    fleet::etcd_options as(const std::string & user) {
        fleet::etcd_options o = cluster->client_options();
        o.user = user;
        o.password = password(user);
        return o;
    }
    // The flags that give an agent (or the CLI) the identity of `user`.
    std::vector<std::string> creds(const std::string & user) {
        return {"--etcd-cacert", pki->ca().string(), "--etcd-cert", pki->cert("client").string(), "--etcd-key", pki->key("client").string(),
                "--etcd-user", user, "--etcd-password-file", password_file(user)};
    }

    // An agent with its own credentials (its host id is its etcd user).
    agent_process & add_agent(const std::string & id, std::vector<std::string> extra = {}, std::vector<std::string> env = {}) {
        agents.push_back(std::make_unique<agent_process>(root.path(), agent_config{id, cluster->endpoints(), with_creds(id, std::move(extra)), std::move(env)}));
        return *agents.back();
    }
    std::vector<std::string> with_creds(const std::string & id, std::vector<std::string> extra) {
        auto c = creds(id);
        c.insert(c.end(), extra.begin(), extra.end());
        return c;
    }

    std::optional<fleet::host_record> record(const std::string & id) {
        auto r = etcd->get(keys.host(id));
        if (!r.ok() || r->kvs.empty()) return std::nullopt;
        auto h = fleet::parse_host_record(r->kvs[0].value);
        if (!h.ok()) return std::nullopt;
        return h.value();
    }
    bool ready(const std::string & id) {
        auto r = record(id);
        return r && r->server.ready && !r->openai_url.empty();
    }
    // What `observer` publishes about `target` ("" when nothing).
    std::string health(const std::string & target, const std::string & observer) {
        auto r = etcd->get(keys.health_entry(target, observer));
        if (!r.ok() || r->kvs.empty()) return "";
        auto j = nlohmann::json::parse(r->kvs[0].value, nullptr, false);
        return j.is_object() ? j.value("state", "") : "";
    }
    nlohmann::json status_json(const std::string & endpoints = "") {
        auto r = run_rustycage({"fleet", "status", "--json", "--etcd", endpoints.empty() ? cluster->endpoints() : endpoints});
        if (r.code != 0) return nlohmann::json();
        auto j = nlohmann::json::parse(r.out, nullptr, false);
        return j.is_discarded() ? nlohmann::json() : j;
    }
    std::string state_in_status(const std::string & id) {
        auto j = status_json();
        if (!j.is_object()) return "";
        for (const auto & h : j["hosts"])
            if (h["id"] == id) return h["state"];
        return "";
    }
    nlohmann::json incidents_json(const std::string & endpoints, bool all = false) {
        std::vector<std::string> args = {"incidents", "list", "--json", "--etcd", endpoints};
        if (all) args.push_back("--all");
        auto r = run_rustycage(args);
        if (r.code != 0) return nlohmann::json::array();
        auto j = nlohmann::json::parse(r.out, nullptr, false);
        return j.is_array() ? j : nlohmann::json::array();
    }
    // A one-token chat completion against a host's server.
    bool serves(const std::string & openai_url) {
        http::client_request req;
        req.method = "POST";
        req.url = openai_url + "/v1/chat/completions";
        req.headers = {"Content-Type: application/json"};
        req.body = R"({"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":2})";
        req.timeout = std::chrono::seconds(30);
        auto r = http::call(req);
        return r.ok() && r->status == 200;
    }
    std::string logs() {
        std::string out;
        for (const auto & a : agents) out += "---- " + a->id() + " ----\n" + a->log().substr(a->log().size() > 6000 ? a->log().size() - 6000 : 0) + "\n";
        return out;
    }

    temp_dir root{"agents"};
    std::unique_ptr<temp_dir> certs;
    std::unique_ptr<test_pki> pki;
    std::unique_ptr<etcd_cluster> cluster;
    std::unique_ptr<fleet::etcd_gateway> etcd;
    fleet::fleet_keys keys;
    std::vector<std::unique_ptr<agent_process>> agents;
};

}  // namespace rc::test
