#pragma once
// One host's part of a cohort rollout, run by its agent: when the active rollout's current cohort
// holds this host, it downloads and verifies the artifact, unpacks it into <data>/versions/<V>,
// smoke-tests the new build on side ports (same models and KV directories), takes its upgrade slots,
// cuts over (drains the old server, starts the new one on the main ports, smoke-tests again),
// switches versions/current, releases its slots and bakes (a crash or a 5xx fails it). Any failure
// rolls the host back to the argv it ran before (and current to the previous version), records an
// incident and marks the host failed / rolled_back, which halts the rollout (rollout_plan.h).
//
// Contract:
// * Every step is written to <p>rollout-hosts/<id>/<host> before it is acted on; a write that
//   cannot be made (etcd away) is retried, the step waits.
// * Resumable: an agent that died mid-way comes back on whatever versions/current says; its progress
//   tells where it was: past the switch (current is the target) it smoke-tests and bakes what runs;
//   before it, it starts the host over (the download resumes, the unpack is a no-op), at most 3 times.
// * Pause: no host starts a step while the rollout is paused; a host already cutting over finishes.
//   Abort or a halt elsewhere: a host that has not cut over yet stops and is `skipped`.
// * Threads: run() on one thread until `should_stop`.
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fleet/etcd/etcd_client.h"
#include "fleet/etcd/fleet_keys.h"
#include "fleet/rollout/rollout_record.h"
#include "fleet/host/supervisor.h"

namespace rc::fleet {

struct rollout_host_options {
    std::string host;
    std::filesystem::path data_dir;
    std::string api_key;
    std::string self_version;  // the version of the agent's own binary (what runs without versions/current)
    std::string self_binary;   // the agent's own binary: the rollback target when there is no previous version
    std::chrono::milliseconds poll{300};
    std::chrono::milliseconds ready_timeout{120000};
    std::chrono::milliseconds smoke_timeout{60000};
    // Artifacts run only when signed by one of these keys (PEM file). Empty: every rollout is refused,
    // unless allow_unsigned (development only).
    std::filesystem::path trusted_keys;
    bool allow_unsigned = false;
};

struct rollout_host_hooks {
    std::function<int64_t()> lease;
    std::function<std::vector<std::string>()> loaded_models;  // loaded on the main server now
    std::function<std::vector<std::string>()> ready_models;   // servable in the models directory
    std::function<void(const std::string & kind, const std::string & model, const std::string & reason, nlohmann::ordered_json evidence)> incident;
    std::function<void()> republish;
};

// The serve arguments with the OpenAI and Ollama ports set to 0 (a free port each): the side server.
std::vector<std::string> side_port_args(const std::vector<std::string> & serve_args);

class rollout_host {
  public:
    rollout_host(etcd_client & etcd, fleet_keys keys, rollout_host_options opts, supervisor & main, rollout_host_hooks hooks);

    void run(const stop_fn & should_stop);

  private:
    enum class gate { go, stop };
    struct outcome {
        std::string step;  // failed | rolled_back | skipped | done
        std::string message;
    };

    outcome upgrade(const rollout_record & r, host_progress & p, const stop_fn & should_stop);
    outcome finish_switched(const rollout_record & r, host_progress & p, const std::vector<std::string> & rollback_argv,
                            const std::string & rollback_link, const stop_fn & should_stop);
    outcome roll_back(const rollout_record & r, host_progress & p, const std::vector<std::string> & argv, const std::string & link,
                      const std::string & why, const std::string & kind);
    outcome fail(const rollout_record & r, host_progress & p, const std::string & why, const std::string & kind, nlohmann::ordered_json evidence = {});
    std::string side_test(const rollout_record & r, const std::filesystem::path & version_dir, const std::vector<std::string> & models,
                          std::vector<std::string> & tail);
    std::string wait_new_server(uint64_t generation);
    std::string bake(const rollout_record & r, const stop_fn & should_stop);
    bool take_slots(const rollout_record & r, host_progress & p, const stop_fn & should_stop);
    gate wait_gate(const rollout_record & r, const stop_fn & should_stop);
    bool write(const rollout_record & r, host_progress & p, const std::string & step, const std::string & message, const stop_fn & should_stop);
    std::vector<std::string> smoke_models(const rollout_record & r) const;

    etcd_client & etcd_;
    fleet_keys keys_;
    rollout_host_options opts_;
    supervisor & main_;
    rollout_host_hooks hooks_;
    stop_fn stop_ = [] { return false; };  // run()'s: waits end early, and nothing is recorded, when the agent stops
};

}  // namespace rc::fleet
