#pragma once
// The rollout driver: every agent campaigns in the etcd election <prefix>election/rollout with its
// host lease; the leader reads the active rollout, its hosts' progress and the live host records,
// asks decide_rollout (rollout_plan.h) what to do and writes it under a compare on the rollout's
// revision (stamping itself as `driver`). Everything it knows is in etcd, so when it dies its lease
// expires, the next candidate leads and carries on from the same records.
//
// Time: a host counts as gone after host_timeout unregistered (no lease-bound record) on this
// driver's monotonic clock; the wall-clock times hosts write are never compared with it.
//
// Contract: run() blocks until `should_stop` (one thread); leading() from any thread.
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <string>

#include "fleet/etcd/etcd_client.h"
#include "fleet/etcd/fleet_keys.h"

namespace rc::fleet {

class rollout_driver {
  public:
    rollout_driver(etcd_client & etcd, fleet_keys keys, std::string host, std::function<int64_t()> lease,
                   std::chrono::milliseconds poll = std::chrono::milliseconds(300));

    void run(const stop_fn & should_stop);
    bool leading() const { return leading_.load(); }
    // One decision on the active rollout; returns whether it wrote something. Errors: etcd's.
    result<bool> step_once();

  private:
    etcd_client & etcd_;
    fleet_keys keys_;
    std::string host_;
    std::function<int64_t()> lease_;
    std::chrono::milliseconds poll_;
    std::atomic<bool> leading_{false};
    std::map<std::string, std::chrono::steady_clock::time_point> unregistered_since_;  // step_once's thread only
};

}  // namespace rc::fleet
