#pragma once
// The fleet's etcd key layout (schema 2; docs/FLEET.md is the reference for other consumers: the
// gateway, cohort upgrades, the console). Every key lives under one prefix (default "fleet/"), so
// several fleets can share a cluster. What a host's agent writes sits under that host's id, so etcd's
// roles can give each agent its own ranges and nothing else (scripts/fleet-etcd-setup.sh):
//
//   <p>hosts/<id>                  host record (host_record.h), on the host's lease: present ⇔ its agent lives
//   <p>roster/<id>                 {id, first_seen, last_registered}: no lease, so a dead host is still listed (down)
//   <p>health/<observer>/<target>  the observer's view of the target (up|degraded|down), on the observer's lease
//   <p>incidents/<host>/<id>       an incident published by <host>'s agent (fleet_incident.h); never expires
//   <p>outbox/<host>/<id>          the triage/filing progress of that incident (outbox.h); the triager writes it on
//   <p>issues/<fingerprint>        the GitHub issue that tracks a fingerprint (the triager's)
//   <p>election/triager            the triager election (etcd's election API keeps candidates under it)
//   <p>rollouts/<id>               a cohort rollout as the operator asked it, with pause/abort (operators only)
//   <p>rollout-active              the id of the newest rollout (operators only; "active" while it is unfinished)
//   <p>rollout-state/<id>          the elected driver's plan and progress of rollout <id>
//   <p>rollout-progress/<host>/<id>  one host's progress in rollout <id>, written by that host's agent
//   <p>rollout-sems/<id>/<sem>     an upgrade semaphore's guard key (its mod_revision orders acquisitions)
//   <p>rollout-slots/<id>/<sem>/<host>  a slot held by <host>, on the host's lease (a dead host frees it)
//   <p>election/rollout            the rollout driver election
//   <p>schema                      "2": the layout version (fleet-etcd-setup.sh writes it; agents when they may)
#include <string>
#include <utility>

namespace rc::fleet {

inline constexpr int fleet_schema_version = 2;

struct fleet_keys {
    std::string prefix = "fleet/";

    std::string schema() const { return prefix + "schema"; }
    std::string hosts() const { return prefix + "hosts/"; }
    std::string host(const std::string & id) const { return hosts() + id; }
    std::string roster() const { return prefix + "roster/"; }
    std::string roster_entry(const std::string & id) const { return roster() + id; }
    std::string health() const { return prefix + "health/"; }
    std::string health_by(const std::string & observer) const { return health() + observer + "/"; }
    std::string health_entry(const std::string & target, const std::string & observer) const { return health_by(observer) + target; }
    std::string incidents() const { return prefix + "incidents/"; }
    std::string incident(const std::string & host, const std::string & id) const { return incidents() + host + "/" + id; }
    std::string outbox() const { return prefix + "outbox/"; }
    std::string outbox_entry(const std::string & host, const std::string & id) const { return outbox() + host + "/" + id; }
    std::string issues() const { return prefix + "issues/"; }
    std::string issue(const std::string & fingerprint) const { return issues() + fingerprint; }
    std::string triager_election() const { return prefix + "election/triager"; }
    std::string rollouts() const { return prefix + "rollouts/"; }
    std::string rollout(const std::string & id) const { return rollouts() + id; }
    std::string rollout_active() const { return prefix + "rollout-active"; }
    std::string rollout_state(const std::string & id) const { return prefix + "rollout-state/" + id; }
    std::string rollout_progress_of(const std::string & host) const { return prefix + "rollout-progress/" + host + "/"; }
    std::string rollout_host(const std::string & id, const std::string & host) const { return rollout_progress_of(host) + id; }
    std::string rollout_sem(const std::string & id, const std::string & sem) const { return prefix + "rollout-sems/" + id + "/" + sem; }
    std::string rollout_slots(const std::string & id, const std::string & sem) const { return prefix + "rollout-slots/" + id + "/" + sem + "/"; }
    std::string rollout_election() const { return prefix + "election/rollout"; }

    // The last path component of `key` under `dir` ("" when it is not directly under it).
    static std::string tail(const std::string & key, const std::string & dir);
    // "<a>/<b>" under `dir` → {a, b}; {"", ""} when the key is not two components below it.
    static std::pair<std::string, std::string> pair_under(const std::string & key, const std::string & dir);
};

// Host ids name keys and appear in URLs: 1-63 of [A-Za-z0-9._-], not starting with '.' or '-'.
bool valid_host_id(const std::string & id);
// Prefixes: non-empty, ending in '/', printable ASCII without spaces.
bool valid_fleet_prefix(const std::string & prefix);

}  // namespace rc::fleet
