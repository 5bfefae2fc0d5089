#pragma once
// The fleet document the web console's Fleet page shows (src/api/ui/README.md, "Fleet data"):
// every host as `rustycage fleet status --json` has it, the incidents as `rustycage incidents list
// --json`, the newest rollouts as `rustycage fleet rollout status --json`, and the elected triager,
// read from etcd.
//
// Each open console polls every 2 s, so the document is cached: it is read again only when it is
// older than `max_age`, and concurrent polls share that one read. A failed read is an error for the
// page to show ("fleet unreachable"); the next poll tries again.
// Threads: document() is thread-safe.
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>

#include <nlohmann/json.hpp>

#include "fleet/etcd/etcd_client.h"
#include "fleet/etcd/fleet_keys.h"
#include "util/result.h"

namespace rc::fleet {

// Reads the document once (no cache): {schema, triager, hosts, incidents, rollouts}.
result<nlohmann::ordered_json> read_console_document(etcd_client & etcd, const fleet_keys & keys);

class console_feed {
  public:
    console_feed(std::unique_ptr<etcd_client> etcd, fleet_keys keys, std::chrono::milliseconds max_age = std::chrono::seconds(2));

    result<nlohmann::ordered_json> document();

  private:
    std::unique_ptr<etcd_client> etcd_;
    fleet_keys keys_;
    std::chrono::milliseconds max_age_;
    std::mutex mutex_;  // held across a read: polls arriving meanwhile wait for its answer
    std::optional<nlohmann::ordered_json> cached_;
    std::chrono::steady_clock::time_point read_at_;
};

}  // namespace rc::fleet
