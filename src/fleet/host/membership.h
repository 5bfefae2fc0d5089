#pragma once
// How an agent sees its peers. It watches <prefix>hosts/ (a put: the peer is registered, with its
// record; a delete: its lease expired or was revoked — it is down) and probes each registered peer's
// /v1/health/ready, so a peer whose agent lives but whose server hangs is degraded. What it sees it
// publishes at <prefix>health/<peer>/<self> on its own lease:
//
//   {"state":"up|degraded|unreachable|down","ready":true,"error":"","checked_at":"...","since":"..."}
//
// Unreachable is not gone: a peer whose record went with its lease is probed at its last address;
// while its server answers it is `unreachable` (its agent is cut off from etcd, or stopped), and
// `down` once the server does not answer either. A `down` peer that left a record is probed on, with
// backoff, until it registers again or its entry is dropped: a host whose server comes back while
// its agent still cannot reach etcd (an etcd outage, a NOSPACE alarm) must be seen `unreachable` —
// serving — and not stay `down` until its agent registers.
//
// Contract:
// * Threads: run_watch() blocks (one thread) until `should_stop`; probe_once() runs on another; peers()
//   and lease_changed() from any thread.
// * etcd failures are retried (watch: from the last revision seen + 1; after a compaction, a fresh read)
//   and never stop the agent. An entry is written when the state changes, or again after the lease changed.
// * Down within TTL + probe: a peer's key goes when its lease expires; the watch sees the delete at once.
// * Lapsed peers' backoff, counted in probe_once() calls (the agent makes one per --probe-interval):
//   after a failed probe the next comes 1 round later, then 2, 4, and at most every
//   k_lapsed_backoff_max_rounds; a probe that answers or a new registration starts again at 1. So a
//   returning server is seen within 2 intervals while the backoff is at its start, within the cap
//   (+ 1) otherwise — and a host gone for good costs one probe per 8 rounds, not one per round.
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "fleet/etcd/etcd_client.h"
#include "fleet/etcd/fleet_keys.h"
#include "fleet/host/host_record.h"

namespace rc::fleet {

struct peer_info {
    std::string id;
    bool registered = false;
    bool lapsed = false;  // unregistered, its last record kept: its server is probed at that address
    std::optional<host_record> record;
    std::string state = "down";  // as this agent sees it
    std::string error;
    std::chrono::system_clock::time_point since{};
};

// The most probe rounds between two probes of a lapsed peer whose server does not answer.
inline constexpr int k_lapsed_backoff_max_rounds = 8;

class peer_monitor {
  public:
    peer_monitor(etcd_client & etcd, fleet_keys keys, std::string self, std::chrono::milliseconds probe_timeout,
                 std::function<int64_t()> current_lease);

    void run_watch(const stop_fn & should_stop);
    void probe_once();
    std::vector<peer_info> peers() const;  // every host seen (self included), by id
    void lease_changed();

  private:
    void apply(const etcd_kv & kv, bool deleted);
    void observe(const std::string & id, const std::string & state, bool ready, const std::string & error);
    // Lapsed peers: whether this round probes `id` (counts the round down otherwise).
    bool lapsed_probe_due(const std::string & id);
    // After a lapsed peer's probe: an answer resets its backoff, a failure doubles it (up to the cap).
    void lapsed_probe_done(const std::string & id, bool answered);

    // A lapsed peer's backoff, in probe rounds.
    struct lapsed_backoff {
        int rounds_to_wait = 0;  // rounds to skip before the next probe
        int next_gap = 1;        // rounds between this failure and the next probe
    };

    etcd_client & etcd_;
    fleet_keys keys_;
    std::string self_;
    std::chrono::milliseconds probe_timeout_;
    std::function<int64_t()> lease_;
    mutable std::mutex mu_;
    std::map<std::string, peer_info> peers_;
    std::map<std::string, std::pair<std::string, int64_t>> written_;  // id → (state, lease) last published
    std::map<std::string, lapsed_backoff> lapsed_backoff_;           // lapsed peers only; gone on (re)registration
};

}  // namespace rc::fleet
