#pragma once
// The fleet's one triager: agents configured for GitHub campaign in the etcd election
// <prefix>election/triager with their host lease; the leader runs the outbox (outbox.h) until its
// lease changes, it is no longer the leader, or it stops (then it resigns). Another agent takes over
// when the leader dies: its lease expires, etcd's election hands leadership to the next candidate.
//
// Contract: run() blocks until `should_stop` (one thread); leading() from any thread. Triage asks
// `--triage-model` on a healthy host that lists it (hosts() supplies them), one host after another,
// and falls back to rule_triage saying why.
#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "fleet/etcd/etcd_client.h"
#include "fleet/etcd/fleet_keys.h"
#include "fleet/incidents/github_client.h"
#include "fleet/host/host_record.h"
#include "fleet/incidents/outbox.h"

namespace rc::fleet {

struct triager_options {
    std::string host;
    std::string triage_model;  // empty: rules only
    std::chrono::milliseconds triage_timeout{60000};
    std::chrono::milliseconds poll_interval{500};
    std::string api_key;  // the fleet's servers' bearer key, when they require one
    outbox_options outbox;
};

class triager {
  public:
    triager(etcd_client & etcd, github_client & github, fleet_keys keys, triager_options opts, std::function<int64_t()> lease,
            std::function<std::vector<host_record>()> healthy_hosts);

    void run(const stop_fn & should_stop);
    bool leading() const { return leading_.load(); }
    triage_result triage(const fleet_incident & inc);

  private:
    etcd_client & etcd_;
    github_client & github_;
    fleet_keys keys_;
    triager_options opts_;
    std::function<int64_t()> lease_;
    std::function<std::vector<host_record>()> hosts_;
    std::atomic<bool> leading_{false};
};

}  // namespace rc::fleet
