#pragma once
// Carries incidents from the host's local log (store/incident_log.h, in the models directory: the
// server, `rustycage pull|create` and the agent all append there) into etcd, each with its outbox
// entry, in one transaction: <prefix>incidents/<id> and <prefix>outbox/<id> are created together or
// not at all. Also how the agent records its own incidents (local first, so an etcd outage loses none).
//
// Contract:
// * Idempotent: the transaction only creates (compare create_revision == 0), so publishing twice —
//   after a crash between etcd's answer and our bookkeeping — changes nothing.
// * Only records of the last 24 hours before the agent started (and all later ones) are published.
// * Published ids are remembered in <data-dir>/published-incidents (one id a line, appended); a lost
//   file only costs re-checks.
// * One thread calls publish_once(); record() may be called from any thread.
#include <filesystem>
#include <mutex>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "fleet/etcd/etcd_client.h"
#include "fleet/incidents/fleet_incident.h"
#include "fleet/etcd/fleet_keys.h"
#include "store/incident_log.h"

namespace rc::fleet {

class incident_publisher {
  public:
    incident_publisher(etcd_client & etcd, fleet_keys keys, std::string host, std::filesystem::path models_dir, std::filesystem::path data_dir,
                       nlohmann::ordered_json versions, nlohmann::ordered_json hardware);

    // Appends an incident of this host to the local log (with its fingerprint and evidence).
    result<store::incident> record(const std::string & kind, const std::string & model, const std::string & digest, const std::string & reason,
                                   nlohmann::ordered_json evidence);

    // Publishes what the local log has that etcd has not; returns how many were new to etcd.
    // Errors: unavailable when etcd could not be reached (the rest waits for the next call).
    result<int> publish_once();

    const nlohmann::ordered_json & versions() const { return versions_; }

  private:
    etcd_client & etcd_;
    fleet_keys keys_;
    std::string host_;
    store::incident_log log_;
    std::filesystem::path published_file_;
    nlohmann::ordered_json versions_, hardware_;
    std::mutex mu_;
    std::set<std::string> published_;
    std::chrono::system_clock::time_point horizon_;  // older local records are not published
};

}  // namespace rc::fleet
