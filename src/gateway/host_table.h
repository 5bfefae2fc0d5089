#pragma once
// The gateway's picture of the fleet: every host it has seen in etcd with its record, its state as
// `rustycage fleet status` derives it (fleet_view.h: up / degraded / down), and what only the
// gateway knows — requests it has in flight to each host, the load a host last reported in a
// lookup answer, and hosts it ejected after a failed connection.
//
// Contract:
// * run() reads <prefix>hosts/ and <prefix>health/ and then watches the fleet prefix, applying puts
//   and deletes as they come (a deleted host record: its lease expired — down). etcd failures are
//   retried with backoff; meanwhile the last picture stays in use (the fleet is advisory: an etcd
//   outage must not stop traffic to hosts that are fine). Blocks until `should_stop`.
// * Routable = up or unreachable, not ejected. An ejection (a connection to the host failed) lasts
//   `eject_for`, or until the host's record names another server (restarted: new pid or address).
// * Unreachable is not gone: a host whose record went with its lease keeps its last record and is
//   `unreachable` (routed on that record) until probe_lapsed() finds its server not answering —
//   then it is down, and still probed (after 1, 2, 4, then every 8 probe rounds) until it
//   registers again: a server that answers again is routable again without waiting for its agent
//   to reach etcd. An agent cut off from etcd does not take a serving server out of the fleet.
// * Trusted records only: hosts/<id> is writable by the agent of <id> alone (etcd's roles,
//   scripts/fleet-etcd-setup.sh), which registers on its lease. A record not on a lease, or naming
//   another id than its key, was not written by an agent: it is ignored (logged once per write), so
//   no request and no client credential is ever sent to the address it names.
// * Thread-safe: the watch thread writes, request threads read and count.
#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fleet/etcd/etcd_client.h"
#include "fleet/etcd/fleet_keys.h"
#include "fleet/view/fleet_view.h"
#include "fleet/host/host_record.h"

namespace rc::gateway {

using steady = std::chrono::steady_clock;

// One host as a request thread sees it (a copy).
struct host_view {
    std::string id, state, why;  // state: up | degraded | unreachable | down
    std::string url;             // where its API listens (the record's OpenAI address; both ports serve every route)
    std::vector<fleet::model_fact> models;  // servable ones (status ready)
    bool ejected = false;
    int inflight = 0;            // this gateway's requests to it, not yet finished
    int reported_busy = -1;      // running + queued it last reported (KV event stream or lookup answer, else its record); -1: unknown
    int others_busy = 0;         // of those, beyond this gateway's requests in flight when it reported
    int slots = 4;               // sequences a model decodes at once (from lookup answers; 4 until one says)
    static bool routable_state(const std::string & s) { return s == "up" || s == "unreachable"; }
    bool routable() const { return routable_state(state) && !ejected && !url.empty(); }
    bool serves(const std::string & model) const;        // a ready model of that name (store::same_model_name)
    bool model_loaded(const std::string & model) const;  // ... and loaded, as the record says
    // What it is busy with now: this gateway's requests in flight (exact, current) and what others
    // sent it, as of its last report. A report counts this gateway's requests of its moment too;
    // taking it whole would keep a host busy with requests that have since finished.
    int busy() const { return inflight + others_busy; }
};

// The load of one host as a request sees it now (the load fields of host_view, without the rest).
struct host_load {
    int inflight = 0, others_busy = 0, slots = 4;
    int busy() const { return inflight + others_busy; }  // as host_view::busy()
};

class host_table {
    struct entry;  // one host's record and what the gateway counts of it (below)

  public:
    host_table(fleet::etcd_client & etcd, fleet::fleet_keys keys, std::chrono::milliseconds eject_for = std::chrono::seconds(10));

    // A silent lapsed host is probed again after 1, 2, 4, then every this many rounds.
    static constexpr int lapsed_backoff_max_rounds = 8;

    void run(const fleet::stop_fn & should_stop);
    // One full read (run() does it first, and after a compaction). Errors: etcd's.
    status refresh();
    // Probes the servers of hosts whose lease lapsed: answering, they stay unreachable (routable);
    // not answering, they are down and probed again with backoff (lapsed_backoff_max_rounds). One
    // call is one round; run_probes() does one every `interval` until `should_stop`.
    void probe_lapsed(std::chrono::milliseconds timeout);
    void run_probes(const fleet::stop_fn & should_stop, std::chrono::milliseconds interval, std::chrono::milliseconds timeout);

    bool synced() const;  // a read of etcd succeeded at least once
    std::vector<host_view> hosts() const;  // by id, down ones included
    std::optional<host_view> host(const std::string & id) const;
    // The routable hosts serving `model` (every routable host for ""), by id: built once per change
    // of the table and shared by the requests until the next, so a routed request copies no host.
    // Their load fields are as of the build; loads() says what they are now.
    struct candidate_set {
        std::vector<host_view> hosts;
        std::vector<char> loaded;  // parallel: the model is loaded there (host_view::model_loaded; true for "")
        std::vector<const entry *> entries;  // parallel, for loads() (a table's entries live as long as it)
    };
    std::shared_ptr<const candidate_set> routable(const std::string & model) const;
    // Each candidate's load now (`out` parallel to its hosts), under one lock.
    void loads(const candidate_set & set, std::vector<host_load> & out) const;
    // The state of `id` right now ("down" for an unknown host), for in-flight requests to check.
    std::string state_of(const std::string & id) const;

    // Counts a request in flight to `id` until the returned token is dropped.
    std::shared_ptr<void> begin(const std::string & id);
    // A connection to `id` failed: route around it (see the contract).
    void eject(const std::string & id);
    // What a lookup answer or a KV event stream said: running + queued, and slots (-1: keep the last known).
    void note_load(const std::string & id, int busy, int slots);

    // The table as /v1/gateway/hosts shows it.
    nlohmann::ordered_json to_json() const;

  private:
    struct entry {
        std::optional<fleet::host_record> record;
        std::optional<fleet::host_record> lapsed;  // the last record, after its lease lapsed
        // What the last probe of a lapsed host's server found: none yet (unreachable, routed on its
        // record), an answer (unreachable, serving), or silence (down, probed again with backoff).
        enum class lapsed_probe { none, answers, silent } lapsed_seen = lapsed_probe::none;
        int lapsed_wait = 0, lapsed_gap = 1;       // rounds before the next probe; the gap after the next silence
        int64_t ignored_revision = 0;              // the last record refused (logged once per write)
        std::map<std::string, fleet::health_observation> observations;  // by observer
        int inflight = 0;
        steady::time_point ejected_until{};
        int ejected_pid = 0;
        std::string ejected_url;
        int record_own = 0;                        // inflight when the record arrived
        int lookup_busy = -1, lookup_own = 0, slots = 4;  // lookup_own: inflight when it was noted
        steady::time_point lookup_at{};
    };
    void apply(const fleet::etcd_kv & kv, bool deleted);
    static void lapse(entry & e);
    host_view view(const std::string & id, const entry & e, steady::time_point now) const;
    static host_load load_of(const entry & e, steady::time_point now);
    void changed() { routable_.clear(); }  // under mu_: a record, state or ejection changed

    struct routable_set {
        std::shared_ptr<const candidate_set> set;
        steady::time_point until;  // the first ejection among the table's hosts to end: rebuilt then
    };

    fleet::etcd_client & etcd_;
    fleet::fleet_keys keys_;
    std::chrono::milliseconds eject_for_;
    mutable std::mutex mu_;
    std::map<std::string, entry> hosts_;  // never erased: candidate_set keeps pointers to entries
    bool synced_ = false;
    int64_t revision_ = 0;
    mutable std::map<std::string, routable_set> routable_;  // by the model a request named, when some host serves it; at most 64
};

}  // namespace rc::gateway
