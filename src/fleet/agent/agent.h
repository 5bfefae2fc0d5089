#pragma once
// The resident agent of one host (`rustycage agent`): supervises the host's `rustycage serve`,
// registers the host in etcd on a lease and keeps its record fresh, watches and probes its peers,
// turns what goes wrong into incidents, and — when configured for GitHub — stands for triager.
//
// Contract:
// * The fleet is advisory: whatever etcd does (a member down, all down, the lease lost), the server
//   keeps being supervised and serving; the agent retries etcd and re-registers (a new lease, the
//   record, the roster entry, its health entries) as soon as etcd answers again, without a restart.
// * Heartbeat: keepalive every TTL/3; a lease etcd no longer knows is replaced at once.
// * The host id is owned: <prefix>hosts/<id> is created on this agent's lease only when absent.
//   Another agent holding it makes run() refuse (invalid_argument naming its address and pid), or
//   wait for its lease to lapse with `takeover`. The lease is remembered in <data-dir>/fleet-lease,
//   so a restarted agent takes its id back at once (it revokes its previous life's lease).
// * Every member etcd lists is learned at start and every 30 s (etcd_gateway::sync_members).
// * Threads: run() starts the supervisor, heartbeat, watch, probe, incident and triager threads and
//   blocks until stop() (any thread, e.g. a signal handler's thread); then it drains the server
//   (supervisor_options.drain_timeout), resigns, revokes the lease (peers see the host leave at once)
//   and marks the roster entry as left.
// * Secrets: the server gets an allow-listed environment (never GITHUB_TOKEN, RUSTYCAGE_API_KEYS, …) and
//   its API keys in a private file made after the data dir's lock is taken; a clean stop removes it.
// * The server binary: <data-dir>/versions/current/bin/rustycage when a cohort rollout installed one
//   (rollout_artifact.h), else the agent's own. Every agent takes part in rollouts (rollout_host.h)
//   and stands for rollout driver (rollout_driver.h).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fleet/etcd/etcd_gateway.h"
#include "fleet/incidents/github_client.h"
#include "fleet/host/hardware.h"
#include "fleet/incidents/incident_publisher.h"
#include "fleet/host/membership.h"
#include "fleet/rollout/rollout_driver.h"
#include "fleet/rollout/rollout_host.h"
#include "fleet/host/server_probe.h"
#include "fleet/host/supervisor.h"
#include "fleet/incidents/triager.h"

namespace rc::fleet {

struct agent_options {
    std::string host_id;
    std::filesystem::path data_dir;
    std::filesystem::path models_dir;
    etcd_options etcd;
    std::string prefix = "fleet/";
    std::chrono::seconds heartbeat_ttl{10};
    std::chrono::milliseconds probe_interval{2000};
    std::chrono::milliseconds probe_timeout{1000};
    std::chrono::milliseconds publish_interval{5000};
    std::string advertise_host;  // replaces the server's bind address in published URLs (e.g. for 0.0.0.0)
    std::string api_key;         // the server's bearer key (--api-key), for the agent's own requests to it
    // Every key the server requires: written to <data-dir>/secrets/server-api-keys (0600) and passed as
    // `--api-key-file`, never on the server's argv or in its environment (server_secrets.h).
    std::vector<std::string> server_api_keys;
    supervisor_options server;
    std::string version, llama_commit;
    // 5xx bursts: at least this many 5xx answers within the window.
    int burst_5xx = 20;
    std::chrono::seconds burst_window{60};
    std::string smoke_model;  // when set: one tiny completion after every start; a failure is an incident
    // Triage: a triager candidate when github.repo is set.
    github_options github;
    std::string triage_model;
    std::chrono::milliseconds triage_timeout{60000};
    outbox_options outbox;
    // Cohort upgrades: how long a new server may take to be ready (side ports, then main ports).
    std::chrono::milliseconds rollout_ready_timeout{120000};
    bool takeover = false;  // another agent holds the host id: wait for its lease to lapse instead of refusing
    // Cohort upgrades run only artifacts signed by one of these keys (PEM); none: every rollout is
    // refused unless allow_unsigned_artifacts (development).
    std::filesystem::path trusted_keys;
    bool allow_unsigned_artifacts = false;
};

class agent {
  public:
    explicit agent(agent_options opts);
    ~agent();

    // Errors: invalid_argument (bad options), io (data dir unusable or held by another agent).
    status run();
    void stop();

  private:
    void heartbeat_loop();
    void probe_loop();
    void incident_loop();
    status register_host();  // errors: etcd's own (an alarm's words), or unavailable when the id is held
    // Who else holds hosts/<id> ("" when nobody, or only this data dir's previous life).
    result<std::string> foreign_holder();
    status claim_host_id();
    std::filesystem::path lease_file() const;
    host_record build_record();
    void on_server_event(const supervisor_event & ev);
    void check_server(const server_snapshot & snap);
    void smoke_test(const std::string & url);
    bool wait(std::chrono::milliseconds d, bool wake_on_republish);
    std::vector<host_record> healthy_hosts() const;
    std::string advertised(const std::string & url) const;

    agent_options opts_;
    fleet_keys keys_;
    std::unique_ptr<etcd_gateway> etcd_;
    std::unique_ptr<github_rest_client> github_;
    std::unique_ptr<supervisor> supervisor_;
    std::unique_ptr<peer_monitor> peers_;
    std::unique_ptr<incident_publisher> incidents_;
    std::unique_ptr<triager> triager_;
    std::unique_ptr<rollout_host> rollout_;
    std::unique_ptr<rollout_driver> rollout_driver_;
    hardware_facts hardware_;

    std::atomic<bool> stopping_{false};
    std::atomic<int64_t> lease_{0};
    std::atomic<bool> republish_{true};
    std::atomic<bool> smoke_pending_{false};
    bool id_taken_ = false;  // heartbeat thread only
    mutable std::mutex mu_;
    std::condition_variable cv_;
    server_snapshot last_snapshot_;
    std::string started_at_;
    uint64_t corrupt_seen_ = 0;
    bool corrupt_baseline_ = false;
    std::vector<std::pair<std::chrono::steady_clock::time_point, uint64_t>> fivexx_;
    std::chrono::steady_clock::time_point last_burst_{};
    int lock_fd_ = -1;
};

}  // namespace rc::fleet
