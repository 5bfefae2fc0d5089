#pragma once
// What the agent tests share: a real etcd cluster, agents in one temp root, and reads of the exact
// keys the fleet writes (host records, health entries, incidents, outbox).
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent_process.h"
#include "etcd_cluster.h"
#include "fleet/etcd_gateway.h"
#include "fleet/fleet_keys.h"
#include "fleet/host_record.h"
#include "fleet/http_transport.h"

namespace rc::test {

#define REQUIRE_ETCD() \
    if (!etcd_cluster::available()) GTEST_SKIP() << "no etcd binary: scripts/setup.sh installs etcd-server"

class fleet_fixture : public ::testing::Test {
  protected:
    void start_cluster(int members) {
        cluster = std::make_unique<etcd_cluster>(members);
        fleet::etcd_options o;
        o.endpoints = cluster->endpoint_list();
        etcd = std::make_unique<fleet::etcd_gateway>(o);  // before the check: a test that goes on after it fails must not crash
        ASSERT_TRUE(cluster->wait_healthy()) << "etcd did not come up; logs in " << cluster->dir();
    }

    agent_process & add_agent(const std::string & id, std::vector<std::string> extra = {}, std::vector<std::string> env = {}) {
        agents.push_back(std::make_unique<agent_process>(root.path(), agent_config{id, cluster->endpoints(), std::move(extra), std::move(env)}));
        return *agents.back();
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
        fleet::http_request req;
        req.method = "POST";
        req.url = openai_url + "/v1/chat/completions";
        req.headers = {"Content-Type: application/json"};
        req.body = R"({"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":2})";
        req.timeout = std::chrono::seconds(30);
        auto r = fleet::http_call(req);
        return r.ok() && r->status == 200;
    }
    std::string logs() {
        std::string out;
        for (const auto & a : agents) out += "---- " + a->id() + " ----\n" + a->log().substr(a->log().size() > 6000 ? a->log().size() - 6000 : 0) + "\n";
        return out;
    }

    temp_dir root{"agents"};
    std::unique_ptr<etcd_cluster> cluster;
    std::unique_ptr<fleet::etcd_gateway> etcd;
    fleet::fleet_keys keys;
    std::vector<std::unique_ptr<agent_process>> agents;
};

}  // namespace rc::test
