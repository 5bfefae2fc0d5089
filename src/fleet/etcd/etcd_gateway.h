#pragma once
// etcd_client over etcd's JSON gateway (etcd 3.4: POST /v3/kv/*, /v3/lease/*, /v3/watch,
// /v3/election/*; keys and values base64, int64 as decimal strings), with libcurl through
// http/http_client.h.
//
// Contract:
// * Several endpoints (members of one cluster): a unary call goes to the member that answered
//   last; when it cannot be reached, or answers that it has no leader / timed out (gRPC codes
//   Unavailable, DeadlineExceeded, HTTP 503), the next member is tried, until each was tried once.
//   A write whose answer was lost may have been applied: callers write idempotently (plain puts) or
//   under a compare (txn) and re-read on a failed compare.
// * Each unary call is bounded by request_timeout per member (a lease keepalive by
//   keepalive_timeout, so a hung member cannot outlast a lease); watch and campaign are streams with
//   no overall limit, stopped through their `should_stop` (polled about once a second).
// * A stream that has carried nothing for stream_idle has its member checked with a linearizable
//   read (which needs the member to be in a quorum). A member that does not answer in time is hung
//   (stopped, blackholed, cut off from its peers): the stream ends with errc::unavailable, the next
//   member becomes the preferred one, and the caller resumes there from its last revision.
// * sync_members() adds the cluster's members (their client URLs) to the endpoints it was given, so
//   an agent told one member still fails over when that one hangs.
// * Thread-safe (shared state: the endpoint list, under a mutex, and the preferred member's index).
#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fleet/etcd/etcd_client.h"
#include "http/http_client.h"

namespace rc::fleet {

struct etcd_options {
    std::vector<std::string> endpoints;  // "http://127.0.0.1:2379"
    std::chrono::milliseconds request_timeout{3000};
    std::chrono::milliseconds connect_timeout{1000};
    std::chrono::milliseconds keepalive_timeout{0};  // per member; 0: request_timeout
    std::chrono::milliseconds stream_idle{2000};     // 0: never check a silent stream's member
    // TLS to https:// members (PEM files; CA default: the system's) and etcd's own authentication:
    // `user` + `password` buy a token (/v3/auth/authenticate) sent with every call and bought again
    // when etcd calls it invalid (expired, or etcd restarted).
    std::string ca_file, cert_file, key_file;
    std::string user, password;
    bool allow_insecure = false;  // plain http:// to a member that is not on loopback
};

// Refuses a plain http:// endpoint that is not on loopback unless allow_insecure (invalid_argument
// naming the endpoint and `flag`-insecure), and a client certificate without its key. `flag`: what
// the caller's flags are called (serve's are --fleet-etcd-…).
status check_etcd_security(const etcd_options & o, const std::string & flag = "--etcd");
bool is_loopback_url(const std::string & url);

// Whether etcd is reached on the network without authentication (no user, no client certificate,
// an endpoint off loopback): anyone who reaches etcd can then register a host and receive chats and
// keys. The agent and the gateway warn loudly at start when it is so.
bool fleet_auth_off_on_network(const etcd_options & o);

// "http://a:2379,http://b:2379" → endpoints (trailing slashes dropped). Errors: invalid_argument
// naming the entry that is not an http(s)://host:port URL.
result<std::vector<std::string>> parse_etcd_endpoints(const std::string & csv);

class etcd_gateway final : public etcd_client {
  public:
    explicit etcd_gateway(etcd_options opts);

    result<etcd_range> get(const std::string & key) override;
    result<etcd_range> get_prefix(const std::string & prefix) override;
    result<int64_t> put(const std::string & key, const std::string & value, int64_t lease = 0) override;
    result<int64_t> del(const std::string & key, bool prefix = false) override;
    result<etcd_txn_result> txn(const std::vector<etcd_compare> & compares, const std::vector<etcd_op> & success,
                                const std::vector<etcd_op> & failure = {}) override;
    result<int64_t> grant(std::chrono::seconds ttl) override;
    result<int64_t> keepalive(int64_t lease) override;
    status revoke(int64_t lease) override;
    result<etcd_lease_ttl> time_to_live(int64_t lease) override;
    result<std::vector<std::string>> alarms() override;
    result<etcd_watch_end> watch(const std::string & prefix, int64_t start_revision, const etcd_events_fn & on_events,
                                 const stop_fn & should_stop) override;
    result<etcd_leader> campaign(const std::string & name, int64_t lease, const std::string & value, const stop_fn & should_stop) override;
    result<std::optional<etcd_leader>> leader(const std::string & name) override;
    status resign(const etcd_leader & leader) override;

    // Adds the members etcd lists (cluster/member/list) to the endpoints; returns how many were new.
    result<size_t> sync_members();
    std::vector<std::string> endpoints() const;

  private:
    // POST /v3/<path> with failover; the parsed answer, or the error etcd (or the transport) gave.
    // `timeout`: per member, 0 for request_timeout.
    result<nlohmann::json> call(const std::string & path, const nlohmann::json & body,
                                std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
    // Whether `endpoint` serves a linearizable read within the stream_idle bound.
    bool member_answers(const std::string & endpoint);
    // POST to each member in turn until one answers (the failover loop of call()).
    result<nlohmann::json> call_members(const std::string & path, const nlohmann::json & body, std::chrono::milliseconds timeout, bool with_token);
    // A fresh token for opts_.user (nothing to do without a user). Errors: unauthenticated, unavailable.
    status authenticate();
    std::string token() const;
    void forget_token();
    http::client_request post(const std::string & endpoint, const std::string & path, const nlohmann::json & body, std::chrono::milliseconds timeout,
                             bool with_token = true) const;
    // A streamed POST to the first member that accepts the connection; `on_data` as http_stream.
    result<long> stream(const std::string & path, const nlohmann::json & body, const std::function<bool(std::string_view)> & on_data,
                        const stop_fn & should_stop, std::string * error_body);

    etcd_options opts_;
    mutable std::mutex mu_;  // guards opts_.endpoints (sync_members appends) and token_
    std::string token_;
    std::atomic<size_t> preferred_{0};
};

// Exposed for tests: the codecs of the gateway's JSON.
std::string etcd_base64_encode(const std::string & bytes);
std::optional<std::string> etcd_base64_decode(const std::string & text);

}  // namespace rc::fleet
