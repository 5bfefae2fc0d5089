// `rustycage agent`: the resident agent of one host (src/fleet/agent/agent.h). Flags it does not know are
// `rustycage serve` flags and go to the server it supervises.
#include <pthread.h>
#include <csignal>
#include <signal.h>

#include <filesystem>
#include <iostream>
#include <thread>

#include "cli_common.h"
#include "build_info.h"
#include "commands.h"
#include "fleet/agent/agent.h"
#include "fleet_cli.h"
#include "http/api_key_file.h"
#include "http/request_guard.h"
#include "util/ascii.h"
#include "util/log.h"
#include "version.h"

namespace rc::cli {

namespace {

struct agent_flags {
    etcd_flags etcd;
    std::string host_id, data_dir;
    std::string heartbeat_ttl = "10s", probe_interval = "2s", probe_timeout = "1s", publish_interval = "5s";
    std::string drain_timeout = "20s", restart_backoff = "500ms", max_backoff = "30s", stable_after = "30s";
    int crash_loop_after = 3;
    std::string advertise_host, smoke_model;
    std::string github_repo, triage_model, triage_timeout = "60s", github_timeout = "15s", github_label = "rustycage-incident";
    std::string github_closed = "reopen", filing_grace = "30s", github_backoff = "2s";
    int burst_5xx = 20;
    std::string burst_window = "60s";
    std::string rollout_ready_timeout = "120s";
    std::string log_level = "info";
    bool quiet_server = false;
    bool takeover = false;
    std::string trusted_keys;
    bool allow_unsigned = false;
    std::string api_key_file;
};

// The value of a serve flag among the pass-through arguments ("--models-dir X" or "--models-dir=X").
std::string find_flag(const std::vector<std::string> & args, const std::string & flag) {
    for (size_t i = 0; i < args.size(); ++i) {
        if (args[i] == flag && i + 1 < args.size()) return args[i + 1];
        if (args[i].starts_with(flag + "=")) return args[i].substr(flag.size() + 1);
    }
    return {};
}

// Takes every "FLAG V" and "FLAG=V" out of the pass-through arguments; their values, in order.
std::vector<std::string> take_flag(std::vector<std::string> & args, const std::string & flag) {
    std::vector<std::string> values;
    for (size_t i = 0; i < args.size();) {
        if (args[i] == flag && i + 1 < args.size()) {
            values.push_back(args[i + 1]);
            args.erase(args.begin() + static_cast<std::ptrdiff_t>(i), args.begin() + static_cast<std::ptrdiff_t>(i) + 2);
        } else if (args[i].starts_with(flag + "=")) {
            values.push_back(args[i].substr(flag.size() + 1));
            args.erase(args.begin() + static_cast<std::ptrdiff_t>(i));
        } else {
            ++i;
        }
    }
    return values;
}

// The server's API keys, from every place `serve` takes them (--api-key, --api-keys or
// RUSTYCAGE_API_KEYS) and the agent's --api-key-file. They are taken out of `serve_args`: the agent
// hands them to its server in a private file, never on its argv (visible to every local user) or in
// its environment (server_secrets.h).
result<std::vector<std::string>> take_server_keys(std::vector<std::string> & serve_args, const std::string & key_file) {
    std::vector<std::string> keys;
    for (const auto & k : take_flag(serve_args, "--api-key")) keys.emplace_back(rc::trim(k));
    const auto lists = take_flag(serve_args, "--api-keys");
    const char * env = std::getenv("RUSTYCAGE_API_KEYS");
    for (const auto & list : lists) {
        const auto more = http::split_api_key_list(list);
        keys.insert(keys.end(), more.begin(), more.end());
    }
    if (lists.empty() && env) {  // as serve: the flag, when given, replaces the variable
        const auto more = http::split_api_key_list(env);
        keys.insert(keys.end(), more.begin(), more.end());
    }
    if (!key_file.empty()) {
        auto from_file = http::read_api_key_file(key_file);
        if (!from_file.ok()) return make_error(from_file.err().code, from_file.err().message + " (--api-key-file)");
        keys.insert(keys.end(), from_file->begin(), from_file->end());
    }
    if (auto st = http::check_api_keys(keys); !st)
        return make_error(errc::invalid_argument, st.err().message + " (--api-key, --api-keys, RUSTYCAGE_API_KEYS)");
    return keys;
}

// Where install.sh puts the lab's release keys.
constexpr const char * k_default_trusted_keys = "/etc/rustycage/trusted-keys.pem";

int run_agent(const agent_flags & f, std::vector<std::string> serve_args) {
    if (!apply_log_level(f.log_level)) return 2;
    fleet::agent_options o;
    try {
        o.heartbeat_ttl = std::chrono::duration_cast<std::chrono::seconds>(parse_duration_flag("--heartbeat-ttl", f.heartbeat_ttl));
        o.probe_interval = parse_duration_flag("--probe-interval", f.probe_interval);
        o.probe_timeout = parse_duration_flag("--probe-timeout", f.probe_timeout);
        o.publish_interval = parse_duration_flag("--publish-interval", f.publish_interval);
        o.server.drain_timeout = parse_duration_flag("--drain-timeout", f.drain_timeout);
        o.server.initial_backoff = parse_duration_flag("--restart-backoff", f.restart_backoff);
        o.server.max_backoff = parse_duration_flag("--max-backoff", f.max_backoff);
        o.server.stable_after = parse_duration_flag("--stable-after", f.stable_after);
        o.triage_timeout = parse_duration_flag("--triage-timeout", f.triage_timeout);
        o.github.timeout = parse_duration_flag("--github-timeout", f.github_timeout);
        o.outbox.filing_grace = parse_duration_flag("--filing-grace", f.filing_grace);
        o.outbox.initial_backoff = parse_duration_flag("--github-backoff", f.github_backoff);
        o.burst_window = std::chrono::duration_cast<std::chrono::seconds>(parse_duration_flag("--burst-window", f.burst_window));
        o.rollout_ready_timeout = parse_duration_flag("--rollout-ready-timeout", f.rollout_ready_timeout);
    } catch (const CLI::ValidationError & e) {
        return fail(e.what());
    }
    if (o.heartbeat_ttl.count() < 2) return fail("--heartbeat-ttl must be at least 2s (etcd's leases count in seconds)");
    auto etcd = etcd_options_for(f.etcd);
    if (!etcd.ok()) return fail(etcd.err());
    warn_if_fleet_auth_off(etcd.value(), "agent");
    if (f.github_closed != "reopen" && f.github_closed != "reference") return fail("--github-closed must be reopen or reference");

    o.host_id = f.host_id;
    o.data_dir = f.data_dir;
    o.etcd = etcd.value();
    // A keepalive must fail over to another member well within the lease: a hung member may not outlast it.
    o.etcd.keepalive_timeout = std::max<std::chrono::milliseconds>(std::chrono::milliseconds(300), o.heartbeat_ttl / 4);
    o.takeover = f.takeover;
    o.trusted_keys = f.trusted_keys;
    if (o.trusted_keys.empty() && std::filesystem::exists(k_default_trusted_keys)) o.trusted_keys = k_default_trusted_keys;
    o.allow_unsigned_artifacts = f.allow_unsigned;
    o.prefix = f.etcd.prefix;
    o.advertise_host = f.advertise_host;
    o.smoke_model = f.smoke_model;
    o.version = running_version();
    o.llama_commit = RUSTYCAGE_LLAMA_COMMIT;
    o.burst_5xx = f.burst_5xx;
    o.triage_model = f.triage_model;
    o.outbox.label = f.github_label;
    o.outbox.closed_policy = f.github_closed;
    if (!f.github_repo.empty()) {
        const auto timeout = o.github.timeout;
        o.github = fleet::github_options_from_env(f.github_repo);
        o.github.timeout = timeout;
    }
    // The server shares the agent's models directory: the agent reads quarantine status and the
    // local incident log there.
    std::string models = find_flag(serve_args, "--models-dir");
    if (models.empty()) {
        const char * env = std::getenv("RUSTYCAGE_MODELS_DIR");
        models = env && *env ? env : default_models_dir();
        serve_args.insert(serve_args.begin(), {"--models-dir", models});
    }
    o.models_dir = models;
    // The agent talks to its server (and the triage model) with the server's own first key.
    auto keys = take_server_keys(serve_args, f.api_key_file);
    if (!keys.ok()) {
        fail(keys.err().message);
        return 2;  // as serve's start-up checks
    }
    o.server_api_keys = keys.value();
    if (!o.server_api_keys.empty()) o.api_key = o.server_api_keys.front();
    std::error_code ec;
    auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) return fail("cannot find the rustycage executable (/proc/self/exe)");
    o.server.argv = {self.string(), "serve"};
    o.server.argv.insert(o.server.argv.end(), serve_args.begin(), serve_args.end());
    // A restarted server loads what its disk tier holds conversations for before it reports ready,
    // so the agent's readiness wait covers the load and the first user after a restart pays none.
    if (find_flag(serve_args, "--preload").empty() && !std::getenv("RUSTYCAGE_PRELOAD"))
        o.server.argv.insert(o.server.argv.end(), {"--preload", "auto"});
    // The web console of this host's server shows the fleet the agent is in.
    if (find_flag(serve_args, "--fleet-etcd").empty()) {
        const auto args = etcd_args(f.etcd, "fleet-etcd");
        o.server.argv.insert(o.server.argv.end(), args.begin(), args.end());
        o.server.argv.insert(o.server.argv.end(), {"--fleet-prefix", f.etcd.prefix});
    }
    o.server.crash_loop_after = f.crash_loop_after;
    o.server.forward_output = !f.quiet_server;

    // Signals are taken by one thread; every thread started later inherits the mask (the server
    // child gets a clean one).
    sigset_t signals = block_stop_signals();

    fleet::agent a(std::move(o));
    std::thread waiter([&] {
        int sig = 0;
        sigwait(&signals, &sig);
        rc::log::info("fleet", "signal", {{"signal", sig}});
        a.stop();
    });
    const status st = a.run();
    pthread_kill(waiter.native_handle(), SIGTERM);  // wakes the waiter if no signal came
    waiter.join();
    if (!st) return fail(st.err());
    return 0;
}

}  // namespace

void register_agent(CLI::App & app, std::function<int()> & action) {
    auto f = std::make_shared<agent_flags>();
    auto * cmd = app.add_subcommand("agent", "Run this host's fleet agent: supervise `rustycage serve`, register in etcd, triage incidents");
    cmd->allow_extras();
    add_etcd_flags(*cmd, f->etcd);
    cmd->add_option("--host-id", f->host_id, "This host's name in the fleet")->envname("RUSTYCAGE_HOST_ID")->required();
    cmd->add_option("--data-dir", f->data_dir, "The agent's own state (lock, publication journal)")->envname("RUSTYCAGE_AGENT_DIR")->required();
    cmd->add_option("--heartbeat-ttl", f->heartbeat_ttl, "Lease TTL of the host record; keepalive every TTL/3")->capture_default_str();
    cmd->add_option("--probe-interval", f->probe_interval, "How often the server and the peers are probed")->capture_default_str();
    cmd->add_option("--probe-timeout", f->probe_timeout, "A probe slower than this fails")->capture_default_str();
    cmd->add_option("--publish-interval", f->publish_interval, "Republish the host record at least this often")->capture_default_str();
    cmd->add_option("--advertise-host", f->advertise_host, "Host name peers reach the server at (when it binds 0.0.0.0)");
    cmd->add_option("--drain-timeout", f->drain_timeout, "On stop, how long the server may take before SIGKILL")->capture_default_str();
    cmd->add_option("--restart-backoff", f->restart_backoff, "First restart delay after a server exit (doubles)")->capture_default_str();
    cmd->add_option("--max-backoff", f->max_backoff, "Longest restart delay")->capture_default_str();
    cmd->add_option("--stable-after", f->stable_after, "Ready this long resets the backoff")->capture_default_str();
    cmd->add_option("--crash-loop-after", f->crash_loop_after, "Exits before ready, in a row, that make a crash loop")->check(CLI::Range(1, 100))->capture_default_str();
    cmd->add_option("--smoke-model", f->smoke_model, "Send this model a one-token request after every server start");
    cmd->add_option("--burst-5xx", f->burst_5xx, "5xx answers within --burst-window that make an incident")->check(CLI::Range(1, 1 << 20))->capture_default_str();
    cmd->add_option("--burst-window", f->burst_window, "Window of --burst-5xx")->capture_default_str();
    cmd->add_option("--github-repo", f->github_repo, "File incidents as issues of owner/name (token: GITHUB_TOKEN, API: GITHUB_API_URL)")
        ->envname("RUSTYCAGE_GITHUB_REPO");
    cmd->add_option("--triage-model", f->triage_model, "A model served by the fleet that triages incidents (rules otherwise)");
    cmd->add_option("--triage-timeout", f->triage_timeout, "How long the triage model may take")->capture_default_str();
    cmd->add_option("--github-timeout", f->github_timeout, "How long one GitHub call may take")->capture_default_str();
    cmd->add_option("--github-label", f->github_label, "Label of the issues the fleet files (dedup looks them up by it)")->capture_default_str();
    cmd->add_option("--github-closed", f->github_closed, "A recurrence of a closed issue: reopen it, or reference it from a new one")->capture_default_str();
    cmd->add_option("--github-backoff", f->github_backoff, "First retry delay after GitHub failed (doubles up to 5m)")->capture_default_str();
    cmd->add_option("--filing-grace", f->filing_grace, "How long a claim by a lost triager is left alone")->capture_default_str();
    cmd->add_option("--rollout-ready-timeout", f->rollout_ready_timeout, "Cohort upgrades: how long a new server may take to be ready")->capture_default_str();
    cmd->add_option("--trusted-keys", f->trusted_keys,
                    std::string("Public keys (PEM) whose signatures let a rollout's artifact run here (default: ") + k_default_trusted_keys + " when it exists)")
        ->envname("RUSTYCAGE_TRUSTED_KEYS");
    cmd->add_flag("--allow-unsigned-artifacts", f->allow_unsigned, "Run rollout artifacts without checking a signature (development only: anyone who can write a rollout to etcd runs code here)");
    cmd->add_flag("--takeover", f->takeover, "When another agent holds this --host-id, wait for its lease to lapse instead of refusing to start");
    cmd->add_option("--api-key-file", f->api_key_file,
                    "The server's API keys, one per line, in a file only its owner can read (preferred over --api-key, which any "
                    "local user sees in ps); the server gets them in a private file of the data dir")
        ->envname("RUSTYCAGE_API_KEY_FILE");
    cmd->add_flag("--quiet-server", f->quiet_server, "Do not copy the server's output to the agent's stderr");
    cmd->add_option("--log-level", f->log_level, "debug, info, warn or error")->envname("RUSTYCAGE_LOG_LEVEL")->capture_default_str();
    cmd->footer("Any other flag is passed to `rustycage serve` (e.g. --openai-port 8080 --models-dir DIR --ctx-size 4096).");
    cmd->callback([f, cmd, &action] {
        auto extras = cmd->remaining();
        action = [f, extras] { return run_agent(*f, extras); };
    });
}

}  // namespace rc::cli
