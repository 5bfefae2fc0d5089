// `rustycage gateway`: one address for the fleet (src/gateway, docs/GATEWAY.md). Serves the OpenAI
// and Ollama routes of a host and forwards each request to the best up host of the fleet in etcd.
#include <signal.h>

#include <iostream>

#include "cli_common.h"
#include "build_info.h"
#include "commands.h"
#include "fleet_cli.h"
#include "gateway/gateway_server.h"
#include "http/api_key_file.h"
#include "http/request_guard.h"
#include "util/log.h"
#include "version.h"

namespace rc::cli {

namespace {

struct gateway_flags {
    etcd_flags etcd;
    gateway::gateway_listen listen;
    std::vector<std::string> api_keys;
    std::string api_keys_csv, host_api_key;
    std::string api_key_file, host_api_key_file;  // keys kept off argv and the environment
    std::string policy = "cache";
    std::string lookup_timeout = "250ms", lookup_grace = "50ms", connect_timeout = "1s", eject_for = "10s";
    int max_attempts = 3;
    bool kv_index = true;
    double load_weight = 1.0;
    int max_body_mb = 32;
    double header_timeout_s = 10;
    std::string log_level = "info";
};

// The clients' keys (--api-key, --api-keys, RUSTYCAGE_API_KEYS, --api-key-file) and the one sent to
// hosts (--host-api-key, RUSTYCAGE_HOST_API_KEY, --host-api-key-file), checked as `serve` checks its
// own. Errors name the flag, never a key.
status gateway_keys(const gateway_flags & f, gateway::gateway_options & o) {
    o.api_keys = f.api_keys;
    if (!f.api_keys_csv.empty())
        for (auto & k : http::split_api_key_list(f.api_keys_csv)) o.api_keys.push_back(std::move(k));
    if (!f.api_key_file.empty()) {
        auto from_file = http::read_api_key_file(f.api_key_file);
        if (!from_file) return make_error(from_file.err().code, from_file.err().message + " (--api-key-file)");
        o.api_keys.insert(o.api_keys.end(), from_file->begin(), from_file->end());
    }
    if (auto st = http::check_api_keys(o.api_keys); !st)
        return make_error(st.err().code, st.err().message + " (--api-key, --api-keys, RUSTYCAGE_API_KEYS, --api-key-file)");
    o.host_api_key = f.host_api_key;
    if (!f.host_api_key_file.empty()) {
        if (!f.host_api_key.empty()) return make_error(errc::invalid_argument, "--host-api-key and --host-api-key-file exclude each other");
        auto from_file = http::read_api_key_file(f.host_api_key_file);
        if (!from_file) return make_error(from_file.err().code, from_file.err().message + " (--host-api-key-file)");
        if (from_file->size() != 1) return make_error(errc::invalid_argument, "--host-api-key-file must hold exactly one key");
        o.host_api_key = from_file->front();
    }
    return {};
}

int run_gateway(gateway_flags & f) {
    if (!apply_log_level(f.log_level)) return 2;
    gateway::gateway_options o;
    std::chrono::milliseconds eject_for;
    try {
        o.lookup_timeout = parse_duration_flag("--lookup-timeout", f.lookup_timeout);
        o.lookup_grace = parse_duration_flag("--lookup-grace", f.lookup_grace);
        o.connect_timeout = parse_duration_flag("--connect-timeout", f.connect_timeout);
        eject_for = parse_duration_flag("--eject-for", f.eject_for);
    } catch (const CLI::ValidationError & e) {
        return fail(e.what());
    }
    auto policy = gateway::parse_route_policy(f.policy);
    if (!policy) return fail("--route-policy must be cache, least-loaded or round-robin");
    o.policy = *policy;
    o.weights.load = f.load_weight;
    o.max_attempts = f.max_attempts;
    o.use_index = f.kv_index;
    if (auto keys = gateway_keys(f, o); !keys) return fail(keys.err());
    o.version = running_version();
    o.llama_commit = RUSTYCAGE_LLAMA_COMMIT;
    f.listen.max_body_bytes = static_cast<size_t>(f.max_body_mb) << 20;
    f.listen.header_timeout = std::chrono::milliseconds(static_cast<long long>(f.header_timeout_s * 1000));
    auto etcd = open_etcd(f.etcd);
    if (!etcd.ok()) return fail(etcd.err());
    if (auto eo = etcd_options_for(f.etcd); eo.ok()) warn_if_fleet_auth_off(eo.value(), "gateway");

    sigset_t signals = block_stop_signals();
    return_large_allocations();

    gateway::gateway_server server(*etcd.value(), keys_for(f.etcd), std::move(o), eject_for);
    if (auto st = server.start(f.listen); !st) return fail(st.err());
    // One machine-readable line, like `serve`: scripts and tests read the bound ports from it.
    std::cout << "rustycage gateway listening openai=http://" << f.listen.host << ":" << server.openai_port();
    if (server.ollama_port() > 0) std::cout << " ollama=http://" << f.listen.host << ":" << server.ollama_port();
    std::cout << " etcd=" << f.etcd.endpoints << std::endl;
    // The cluster's other members are learned now and every 30 s (as the agent does), so a gateway
    // given one endpoint still fails over when that member dies or hangs.
    (void) etcd.value()->sync_members();
    const timespec every{30, 0};
    int sig;
    while ((sig = sigtimedwait(&signals, nullptr, &every)) < 0) (void) etcd.value()->sync_members();
    rc::log::info("gateway", "stopping", {{"signal", sig}});
    server.stop();
    return 0;
}

}  // namespace

void register_gateway(CLI::App & app, std::function<int()> & action) {
    auto f = std::make_shared<gateway_flags>();
    auto * cmd = app.add_subcommand("gateway", "One address for the fleet: route each request to the best up host (by model, cached prefix, load)");
    add_etcd_flags(*cmd, f->etcd);
    cmd->add_option("--host", f->listen.host, "Address to bind")->envname("RUSTYCAGE_HOST")->capture_default_str();
    cmd->add_option("--openai-port", f->listen.openai_port, "Port for OpenAI clients (0: any free port)")
        ->envname("RUSTYCAGE_OPENAI_PORT")->check(CLI::Range(0, 65535))->capture_default_str();
    cmd->add_option("--ollama-port", f->listen.ollama_port, "Port for Ollama clients (0: any free port, -1: none)")
        ->envname("RUSTYCAGE_OLLAMA_PORT")->check(CLI::Range(-1, 65535))->capture_default_str();
    cmd->add_option("--route-policy", f->policy, "cache (cached prefix against load), least-loaded or round-robin")
        ->envname("RUSTYCAGE_GATEWAY_POLICY")->capture_default_str();
    cmd->add_option("--lookup-timeout", f->lookup_timeout, "How long to wait for hosts' KV lookups of a prompt seen before")->capture_default_str();
    cmd->add_option("--lookup-grace", f->lookup_grace, "... of a prompt never seen (a cache hit is unlikely)")->capture_default_str();
    cmd->add_option("--kv-index", f->kv_index,
                    "Route from the block index (hosts' KV events, the gateway's own key chains); false: ask every host for every request")
        ->envname("RUSTYCAGE_GATEWAY_KV_INDEX")->capture_default_str();
    cmd->add_option("--load-weight", f->load_weight, "What a fully occupied host costs, in shares of a cached prompt")
        ->check(CLI::Range(0.0, 100.0))->capture_default_str();
    cmd->add_option("--max-attempts", f->max_attempts, "Hosts tried per request when they fail before answering")
        ->check(CLI::Range(1, 16))->capture_default_str();
    cmd->add_option("--connect-timeout", f->connect_timeout, "Connecting to a host slower than this fails over")->capture_default_str();
    cmd->add_option("--eject-for", f->eject_for, "A host whose connection failed gets no traffic this long (or until it restarts)")
        ->capture_default_str();
    cmd->add_option("--api-key", f->api_keys, "Require this bearer key from clients (repeatable); health and metrics stay public");
    cmd->add_option("--api-keys", f->api_keys_csv, "Comma-separated API keys")->envname("RUSTYCAGE_API_KEYS");
    cmd->add_option("--host-api-key", f->host_api_key, "Bearer key to send to hosts (default: pass the client's Authorization on)")
        ->envname("RUSTYCAGE_HOST_API_KEY");
    cmd->add_option("--api-key-file", f->api_key_file,
                    "Client keys from a private file, one per line (kept out of ps and the environment; docs/SECURITY.md)");
    cmd->add_option("--host-api-key-file", f->host_api_key_file, "The key to send to hosts, from a private file");
    cmd->add_option("--max-body-mb", f->max_body_mb, "Largest accepted request body, MiB")->check(CLI::Range(1, 4096))->capture_default_str();
    cmd->add_option("--max-connections", f->listen.max_connections, "Open connections per port (each holds a thread); more are answered 503")
        ->check(CLI::Range(1, 65536))->envname("RUSTYCAGE_MAX_CONNECTIONS")->capture_default_str();
    cmd->add_option("--header-timeout", f->header_timeout_s, "Seconds a request's header block may take to arrive; slower clients get 408 and are disconnected")
        ->check(CLI::Range(0.1, 3600.0))->envname("RUSTYCAGE_HEADER_TIMEOUT")->capture_default_str();
    cmd->add_option("--log-level", f->log_level, "debug, info, warn or error")->envname("RUSTYCAGE_LOG_LEVEL")->capture_default_str();
    cmd->callback([f, &action] { action = [f] { return run_gateway(*f); }; });
}

}  // namespace rc::cli
