#pragma once
// A cohort rollout as etcd keeps it (schema 2, JSON; docs/FLEET.md "Cohort upgrades"). Three kinds
// of keys, each written by one kind of identity (scripts/fleet-etcd-setup.sh gives the roles):
//
//   <p>rollouts/<id>                 what the operator asked: the artifact, its signature, the cohort
//                                    shape, and a pause or abort ("request"). Operators only.
//   <p>rollout-state/<id>            the elected driver's plan and progress: cohorts, the cohort in
//                                    progress, done/failed. Any agent may drive, so agents write it,
//                                    always under a compare on both documents' revisions.
//   <p>rollout-progress/<host>/<id>  one host's progress, written only by that host's agent, before
//                                    each step is acted on.
//
// An agent's credential can therefore plan, advance or halt a rollout, but never name what runs:
// the artifact, its signature and the version come only from the operator's document (and a host
// checks the signature against its own keys before unpacking anything).
//
// Rollout states: pending → running ⇄ paused → done | failed (halted: a host failed, the reason in
// `message`) | aborted (by the operator). Paused and aborted are the operator's request laid over
// the driver's state. `<p>rollout-active` names the newest rollout; it is active while unfinished.
// Host steps: pending → downloading → unpacking → side_test → waiting_slot → cutover → smoke →
// baking → done; or failed (the main server was never touched), rolled_back (it was, and runs its
// previous version again), skipped (the rollout stopped before this host's cutover).
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fleet/etcd/etcd_client.h"
#include "fleet/etcd/fleet_keys.h"
#include "util/result.h"

namespace rc::fleet {

inline constexpr int rollout_schema = 2;

struct rollout_spec {
    std::string version;   // what the hosts end on (the artifact's VERSION must say so)
    std::string artifact;  // http(s) URL or an absolute path on the hosts
    std::string sha256;    // of the artifact (lower-case hex); checked before anything is unpacked
    std::string signature; // where its .sig is (URL or absolute path); "" → artifact + ".sig". Hosts verify it
                           // against their own trusted keys before unpacking (artifact_signature.h)
    int cohort_size = 1;
    int max_unavailable = 1;
    std::vector<std::string> smoke_models;  // empty: each host smokes what it has loaded (else its first model)
    std::chrono::milliseconds bake{60000};
    std::chrono::milliseconds host_timeout{600000};  // a planned host unregistered this long halts the rollout
};

struct rollout_planned_host {
    std::string id;
    std::vector<std::string> models;  // the ready models it served when the rollout was planned
    std::string from_version;
};

// What the operator asked after creating the rollout.
struct rollout_request {
    std::string state;  // "" (carry on) | paused | aborted
    std::string message, at;
};

struct rollout_record {
    int schema = rollout_schema;
    std::string id;
    rollout_spec spec;
    rollout_request request;        // the operator's (rollouts/<id>)
    std::string state = "pending";  // pending | running | paused | done | failed | aborted: the driver's, with the request laid over
    std::string message;
    std::string created_at, created_by, started_at, finished_at, driver;
    std::vector<std::vector<std::string>> cohorts;  // [0] is the canary
    int cohort = -1;                                // the cohort in progress (running/paused)
    std::string cohort_started_at;
    std::vector<rollout_planned_host> hosts;        // by id
    std::map<std::string, int> slots;               // semaphore → capacity ("all", "model:<name>")
    std::vector<std::string> notes;                 // what the planner wants operators to know
    // etcd's revisions of the two documents (0: absent); not serialized.
    int64_t spec_revision = 0, state_revision = 0;
    // The driver's own state, message and finish time, before the request was laid over them.
    std::string driver_state = "pending", driver_message, driver_finished_at;

    const rollout_planned_host * host(const std::string & id) const;
    int cohort_of(const std::string & host) const;  // -1 when not planned
    bool finished() const { return state == "done" || state == "failed" || state == "aborted"; }
};

struct host_progress {
    std::string host;
    std::string step = "pending";
    std::string from_version, message, updated_at, bake_until;
    int attempts = 0;
    int64_t mod_revision = 0;

    bool terminal() const { return step == "done" || step == "failed" || step == "rolled_back" || step == "skipped"; }
    static host_progress at(std::string host, std::string step = "pending", std::string message = "") {
        host_progress p;
        p.host = std::move(host);
        p.step = std::move(step);
        p.message = std::move(message);
        return p;
    }
};

nlohmann::ordered_json to_json(const rollout_record & r);  // both documents in one (for people)
nlohmann::ordered_json to_json(const host_progress & p);
// Errors: invalid_argument when not an object with a string id (rollout) / host (progress).
result<rollout_record> parse_rollout(const std::string & text);
result<host_progress> parse_host_progress(const std::string & text);

// "ro-20261201T101112Z-1a2b": for people; creation order is etcd's create revision (read_rollouts).
std::string new_rollout_id();
// Versions name directories: 1-64 of [A-Za-z0-9._+-], not starting with '.' or '-'.
bool valid_version_name(const std::string & v);
// A semaphore's name as a key component ('/' and other odd characters percent-encoded).
std::string slot_key_name(const std::string & sem);

// A rollout with its hosts' progress, as operators (and the console) read it.
struct rollout_view {
    rollout_record rollout;
    std::map<std::string, host_progress> progress;
};
// {id, version, state, done, total, cohort, started_at, message, …}: the console's shape
// (src/api/ui/README.md) plus the plan and each host's step.
nlohmann::ordered_json to_json(const rollout_view & v);

// The rollout `id`; "" means the active one, else the newest. Errors: not_found, unavailable.
result<rollout_view> read_rollout(etcd_client & etcd, const fleet_keys & keys, const std::string & id = "");
// The rollout `id` without its hosts' progress (what a host polls between steps).
result<rollout_record> read_rollout_record(etcd_client & etcd, const fleet_keys & keys, const std::string & id);
// Every rollout, newest first, at most `limit`.
result<std::vector<rollout_view>> read_rollouts(etcd_client & etcd, const fleet_keys & keys, size_t limit = 10);

// The operator's writes. create_rollout writes rollouts/<id> and makes it the active one, unless the
// active one is unfinished; request_rollout writes r.request if rollouts/<id> is still at
// r.spec_revision. Both return false when someone else wrote first (re-read and decide again).
result<bool> create_rollout(etcd_client & etcd, const fleet_keys & keys, const rollout_record & r);
result<bool> request_rollout(etcd_client & etcd, const fleet_keys & keys, const rollout_record & r);
// The driver's write: rollout-state/<id>, if neither document changed since `r` was read.
result<bool> write_rollout_state(etcd_client & etcd, const fleet_keys & keys, const rollout_record & r);

}  // namespace rc::fleet
