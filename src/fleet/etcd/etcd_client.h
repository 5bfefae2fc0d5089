#pragma once
// The fleet's view of etcd: the few v3 operations the agent, the triager and the CLI need (KV,
// transactions, leases, watch, elections), as one interface. etcd_gateway.h speaks it to real members
// over their JSON gateway; tests/fleet/fake_etcd.h keeps it in memory for unit tests.
//
// Contract (every implementation):
// * Errors: errc::unavailable when no member answered (transport failure, no quorum, timeouts) —
//   retry later; errc::not_found for a lease etcd does not know; errc::invalid_argument for a request
//   etcd refused. A failed compare in txn() is a value (succeeded == false), never an error.
// * Thread-safe: any thread may call any method; blocking calls (watch, campaign) return when their
//   `should_stop` says so, within about a second.
// * Revisions, lease IDs and TTLs are etcd's int64 values; 0 means "none" for a lease.
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "util/result.h"

namespace rc::fleet {

struct etcd_kv {
    std::string key;
    std::string value;
    int64_t create_revision = 0;
    int64_t mod_revision = 0;
    int64_t version = 0;
    int64_t lease = 0;
};

struct etcd_range {
    std::vector<etcd_kv> kvs;
    int64_t revision = 0;  // the store's revision when the read was served
};

struct etcd_event {
    bool is_delete = false;
    etcd_kv kv;  // for a delete: key and mod_revision only
};

// One comparison of a transaction: `key`'s `target` compared with `number` (revisions, version) or `value`.
struct etcd_compare {
    enum class target { create_revision, mod_revision, version, value };
    enum class op { equal, not_equal, greater, less };
    std::string key;
    target what = target::create_revision;
    op result = op::equal;
    int64_t number = 0;
    std::string value;

    static etcd_compare absent(std::string key) { return {std::move(key), target::create_revision, op::equal, 0, {}}; }
    static etcd_compare mod_revision_is(std::string key, int64_t rev) { return {std::move(key), target::mod_revision, op::equal, rev, {}}; }
    static etcd_compare value_is(std::string key, std::string v) { return {std::move(key), target::value, op::equal, 0, std::move(v)}; }
};

struct etcd_op {
    enum class kind { put, del, get };
    kind what = kind::put;
    std::string key;
    std::string value;
    int64_t lease = 0;
    bool prefix = false;  // del and get: every key starting with `key`

    static etcd_op put(std::string key, std::string value, int64_t lease = 0) { return {kind::put, std::move(key), std::move(value), lease, false}; }
    static etcd_op del(std::string key) { return {kind::del, std::move(key), {}, 0, false}; }
    static etcd_op get(std::string key) { return {kind::get, std::move(key), {}, 0, false}; }
};

struct etcd_txn_result {
    bool succeeded = false;
    int64_t revision = 0;
    std::vector<etcd_range> ranges;  // one per get op of the branch that ran, in order
};

struct etcd_lease_ttl {
    int64_t ttl = -1;          // seconds left; -1 when the lease is gone
    int64_t granted_ttl = 0;
};

struct etcd_leader {
    std::string name;   // the election
    std::string key;    // the leader's key under the election's prefix
    int64_t rev = 0;
    int64_t lease = 0;
    std::string value;
};

struct etcd_watch_end {
    int64_t next_revision = 0;  // resume from here
    bool compacted = false;     // history before next_revision is gone: re-read, then watch from the read's revision + 1
};

using etcd_events_fn = std::function<void(const std::vector<etcd_event> & events, int64_t revision)>;
using stop_fn = std::function<bool()>;
// Waits `d`, or less once `should_stop` says so (asked every 50 ms): the fleet's loops between polls.
void pause_unless_stopped(const stop_fn & should_stop, std::chrono::milliseconds d);

class etcd_client {
  public:
    virtual ~etcd_client() = default;

    virtual result<etcd_range> get(const std::string & key) = 0;
    virtual result<etcd_range> get_prefix(const std::string & prefix) = 0;
    // Returns the revision of the write.
    virtual result<int64_t> put(const std::string & key, const std::string & value, int64_t lease = 0) = 0;
    // Returns how many keys were deleted.
    virtual result<int64_t> del(const std::string & key, bool prefix = false) = 0;
    virtual result<etcd_txn_result> txn(const std::vector<etcd_compare> & compares, const std::vector<etcd_op> & success,
                                        const std::vector<etcd_op> & failure = {}) = 0;

    virtual result<int64_t> grant(std::chrono::seconds ttl) = 0;  // the new lease's ID
    // Renews a lease; returns the TTL it now has, 0 when the lease is gone (expired or revoked).
    virtual result<int64_t> keepalive(int64_t lease) = 0;
    virtual status revoke(int64_t lease) = 0;
    virtual result<etcd_lease_ttl> time_to_live(int64_t lease) = 0;
    // The cluster's active alarms, as "NOSPACE on member 8e9e05c52164694d" (none: empty). During
    // NOSPACE etcd refuses writes: agents cannot register or renew. Clients without the call say none.
    virtual result<std::vector<std::string>> alarms() { return std::vector<std::string>{}; }

    // Delivers the changes of keys under `prefix` from `start_revision` on, in order, until
    // should_stop() (then next_revision is where to resume) or a compaction. The stream breaking
    // (its member died) is errc::unavailable: call again from the last revision seen + 1.
    virtual result<etcd_watch_end> watch(const std::string & prefix, int64_t start_revision, const etcd_events_fn & on_events,
                                         const stop_fn & should_stop) = 0;

    // Blocks until this lease's candidate leads election `name` (value published as the leader's
    // value). Stopped or broken: errc::unavailable; the candidacy is withdrawn by etcd then.
    virtual result<etcd_leader> campaign(const std::string & name, int64_t lease, const std::string & value, const stop_fn & should_stop) = 0;
    // The current leader, or nullopt when nobody leads.
    virtual result<std::optional<etcd_leader>> leader(const std::string & name) = 0;
    virtual status resign(const etcd_leader & leader) = 0;
};

// The first key after every key with this prefix (etcd's range_end for a prefix).
std::string etcd_prefix_end(const std::string & prefix);

// Writes `value` under `key`, again every `poll` until etcd takes it (a record that must not be lost
// to an outage, such as a rollout step's final state); false only when stopped first.
bool put_until_taken(etcd_client & etcd, const std::string & key, const std::string & value, const stop_fn & should_stop,
                     std::chrono::milliseconds poll);

}  // namespace rc::fleet
