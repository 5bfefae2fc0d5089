#pragma once
// The fleet as an operator (and later the gateway and console) reads it from etcd: every host with
// its derived state, and the incidents with their filing progress. Used by `rustycage fleet status`
// and `rustycage incidents …`.
//
// State of a host (derive_host_state, pure):
//   down      no record (its lease expired or was revoked) — listed because the roster knows it
//   unreachable  no record, but a peer's probe reaches its server: its agent is cut off from etcd
//             (or stopped) while the server serves; the gateway keeps routing to it
//   degraded  registered, but its own agent reports the server not ready (starting, crash loop,
//             unresponsive), or a peer's fresh probe of its /v1/health/ready failed
//   up        registered, ready, and no peer disagrees
// Contract: reads only (ack_incident writes one key under a compare); errors are etcd's (unavailable).
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fleet/etcd/etcd_client.h"
#include "fleet/incidents/fleet_incident.h"
#include "fleet/etcd/fleet_keys.h"
#include "fleet/host/host_record.h"
#include "fleet/incidents/outbox.h"

namespace rc::fleet {

struct health_observation {
    std::string observer, state, error, checked_at;
    bool ready = false;
};

struct host_view {
    std::string id, state, why;
    std::optional<host_record> record;
    int64_t lease = 0;
    int64_t ttl_left = -1, ttl_granted = 0;  // heartbeat age ≈ granted − left
    std::vector<health_observation> observations;  // by peers
    std::string first_seen, left_at;
    std::string ignored;  // why its record is not a registration (not on a lease, another host's id): ""
    int open_incidents = 0;
};

std::string derive_host_state(const std::optional<host_record> & record, const std::vector<health_observation> & observations, std::string & why);

struct incident_view {
    fleet_incident incident;
    std::optional<outbox_entry> outbox;
};

struct fleet_snapshot {
    std::vector<host_view> hosts;          // by id
    std::string triager;                   // the elected triager's host, or ""
    std::vector<std::string> alarms;       // etcd's active alarms (etcd_client::alarms): NOSPACE stops registrations
    std::vector<incident_view> incidents;  // newest first, as read_incidents (read anyway for open_incidents)
};
result<fleet_snapshot> read_fleet(etcd_client & etcd, const fleet_keys & keys);

// Newest first (ids start with their time).
result<std::vector<incident_view>> read_incidents(etcd_client & etcd, const fleet_keys & keys);
// By id, or by a unique prefix of one. Errors: not_found, invalid_argument (ambiguous prefix), unavailable.
result<incident_view> find_incident(etcd_client & etcd, const fleet_keys & keys, const std::string & id);
// Marks an incident acknowledged (by whom, when). Acknowledging twice keeps the first.
result<fleet_incident> ack_incident(etcd_client & etcd, const fleet_keys & keys, const std::string & id, const std::string & by);

nlohmann::ordered_json to_json(const host_view & h);
nlohmann::ordered_json to_json(const incident_view & v);
// "open", "acked", plus where filing stands: "pending", "filing", "#12".
std::string filing_status(const incident_view & v);

}  // namespace rc::fleet
