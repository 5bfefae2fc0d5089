#pragma once
// The fleet's etcd key layout (schema 1; docs/FLEET.md is the reference for other consumers: the
// gateway, cohort upgrades, the console). Every key lives under one prefix (default "fleet/"), so
// several fleets can share a cluster:
//
//   <p>hosts/<id>                  host record (host_record.h), on the host's lease: present ⇔ its agent lives
//   <p>roster/<id>                 {id, first_seen, last_registered}: no lease, so a dead host is still listed (down)
//   <p>health/<target>/<observer>  the observer's view of the target (up|degraded|down), on the observer's lease
//   <p>incidents/<id>              an incident (fleet_incident.h); never expires
//   <p>outbox/<id>                 the triage/filing progress of incident <id> (outbox.h)
//   <p>issues/<fingerprint>        the GitHub issue that tracks a fingerprint
//   <p>election/triager            the triager election (etcd's election API keeps candidates under it)
//   <p>rollouts/<id>               a cohort rollout (rollout_record.h); never expires
//   <p>rollout-active              the id of the rollout that is not finished yet (at most one)
//   <p>rollout-hosts/<id>/<host>   one host's progress in rollout <id>, written by that host's agent
//   <p>rollout-sems/<id>/<sem>     an upgrade semaphore's guard key (its mod_revision orders acquisitions)
//   <p>rollout-slots/<id>/<sem>/<host>  a slot held by <host>, on the host's lease (a dead host frees it)
//   <p>election/rollout            the rollout driver election
//   <p>schema                      "1": the layout version, written by every agent that registers
#include <string>

namespace rc::fleet {

inline constexpr int fleet_schema_version = 1;

struct fleet_keys {
    std::string prefix = "fleet/";

    std::string schema() const { return prefix + "schema"; }
    std::string hosts() const { return prefix + "hosts/"; }
    std::string host(const std::string & id) const { return hosts() + id; }
    std::string roster() const { return prefix + "roster/"; }
    std::string roster_entry(const std::string & id) const { return roster() + id; }
    std::string health() const { return prefix + "health/"; }
    std::string health_of(const std::string & target) const { return health() + target + "/"; }
    std::string health_entry(const std::string & target, const std::string & observer) const { return health_of(target) + observer; }
    std::string incidents() const { return prefix + "incidents/"; }
    std::string incident(const std::string & id) const { return incidents() + id; }
    std::string outbox() const { return prefix + "outbox/"; }
    std::string outbox_entry(const std::string & id) const { return outbox() + id; }
    std::string issues() const { return prefix + "issues/"; }
    std::string issue(const std::string & fingerprint) const { return issues() + fingerprint; }
    std::string triager_election() const { return prefix + "election/triager"; }
    std::string rollouts() const { return prefix + "rollouts/"; }
    std::string rollout(const std::string & id) const { return rollouts() + id; }
    std::string rollout_active() const { return prefix + "rollout-active"; }
    std::string rollout_hosts(const std::string & id) const { return prefix + "rollout-hosts/" + id + "/"; }
    std::string rollout_host(const std::string & id, const std::string & host) const { return rollout_hosts(id) + host; }
    std::string rollout_sem(const std::string & id, const std::string & sem) const { return prefix + "rollout-sems/" + id + "/" + sem; }
    std::string rollout_slots(const std::string & id, const std::string & sem) const { return prefix + "rollout-slots/" + id + "/" + sem + "/"; }
    std::string rollout_election() const { return prefix + "election/rollout"; }

    // The last path component of `key` under `dir` ("" when it is not directly under it).
    static std::string tail(const std::string & key, const std::string & dir);
};

// Host ids name keys and appear in URLs: 1-63 of [A-Za-z0-9._-], not starting with '.' or '-'.
bool valid_host_id(const std::string & id);
// Prefixes: non-empty, ending in '/', printable ASCII without spaces.
bool valid_fleet_prefix(const std::string & prefix);

}  // namespace rc::fleet
