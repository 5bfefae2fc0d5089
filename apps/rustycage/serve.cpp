// `rustycage serve`: the OpenAI + Ollama + health API on two ports, models loaded on demand.
#include <condition_variable>
#include <csignal>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <filesystem>
#include <iostream>
#include <memory>

#include "api/api_server.h"
#include "fleet/view/console_feed.h"
#include "llama/template_budget.h"
#include "fleet_cli.h"
#include "http/api_key_file.h"
#include "api/ollama/keep_alive.h"
#include "cli_common.h"
#include "build_info.h"
#include "commands.h"
#include "serve_preload.h"
#include "kv/kv_events.h"
#include "models/model_manager.h"
#include "util/byte_size.h"
#include "util/log.h"
#include "version.h"

namespace rc::cli {

namespace {

struct serve_flags {
    engine_flags eng;
    api::listen_options listen;
    api::api_options api;
    std::string api_keys_env;
    bool api_keys_given = false;
    std::string api_key_file;  // --api-key-file: keys one per line, kept off argv and the environment
    double header_timeout_s = 10;
    double shutdown_timeout_s = 10;
    double template_timeout_s = 10;
    std::vector<std::string> preload;
    int max_body_mb = 32;
    std::string memory_budget;  // empty: 80% of physical RAM
    std::string device_memory;  // empty: what the devices report
    std::string fit_margin;     // empty: the fit's default
    CLI::Option * max_tokens = nullptr;  // given: one request of it is the fit's floor under the context pool
    std::string keep_alive = "5m";
    etcd_flags fleet;  // --fleet-etcd: the console's Fleet page reads this fleet (no endpoints: standalone)
};

std::string trim(const std::string & s) {
    const auto b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) return {};
    return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// --api-key values and the comma-separated --api-keys / RUSTYCAGE_API_KEYS, trimmed. Empty entries
// are kept so that check_api_keys refuses them: "--api-key $UNSET" or a stray comma must stop the
// server, not start it with a key list that means something else than written.
std::vector<std::string> collect_keys(const std::vector<std::string> & flags, const std::string & list, bool list_given) {
    std::vector<std::string> out;
    for (const auto & k : flags) out.push_back(trim(k));
    if (list_given) {
        const auto more = http::split_api_key_list(list);
        out.insert(out.end(), more.begin(), more.end());
    }
    return out;
}

// Stops the server gracefully (in-flight requests finish) on a helper thread. A second signal or
// `seconds` without it finishing ends what still runs: each generation answers 503 (a stream sends
// its error event and ends), so no request (a stream running to a large max_tokens) can hold up a
// shutdown and none is cut off mid-chunk. Only a server that has not stopped `k_end_grace` after
// that (a client that reads nothing) ends the process at once, with status 1.
constexpr auto k_end_grace = std::chrono::seconds(3);

// A second stop signal means "end the requests now" — unless it repeats the parent's death: the
// kernel sends the parent-death signal again for each of the dying agent's threads, and an agent
// killed with -9 must still get one graceful drain (docs/FLEET.md "Failure modes").
bool repeats_parent_death(const siginfo_t & info, pid_t parent) { return parent > 1 && info.si_code == SI_USER && info.si_pid == parent; }

int stop_within(api::api_server & server, const sigset_t & signals, double seconds, pid_t parent) {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    std::thread stopper([&] {
        server.stop();
        std::lock_guard lock(mu);
        done = true;
        cv.notify_all();
    });
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
    bool ending = false, forced = false;
    for (;;) {
        {
            std::unique_lock lock(mu);
            if (cv.wait_for(lock, std::chrono::milliseconds(100), [&] { return done; })) break;
        }
        timespec poll{0, 0};
        siginfo_t info{};
        const bool signalled = sigtimedwait(&signals, &info, &poll) > 0 && !repeats_parent_death(info, parent);
        if (!signalled && std::chrono::steady_clock::now() < deadline) continue;
        if (ending) {
            forced = true;
            break;
        }
        rc::log::warn("serve", "ending_requests", {{"reason", signalled ? "a second signal" : "requests still running after the shutdown timeout"}});
        server.end_requests();
        ending = true;
        deadline = std::chrono::steady_clock::now() + k_end_grace;
    }
    if (forced) {
        rc::log::warn("serve", "forced_exit", {{"reason", "connections still open after their requests were ended"}});
        std::fflush(nullptr);
        std::_Exit(1);
    }
    stopper.join();
    return 0;
}

int serve(serve_flags & f) {
    if (!apply_log_level(f.eng.log_level)) return 2;
    resolve_kv_defaults(f.eng);
    // Everything a request would otherwise trip over later is checked now: a server that says it
    // is listening must be able to serve.
    if (auto st = check_engine_paths(f.eng); !st) {
        std::cerr << "error: " << st.err().message << "\n";
        return 2;
    }
    f.api.api_keys = collect_keys(f.api.api_keys, f.api_keys_env, f.api_keys_given);
    if (!f.api_key_file.empty()) {
        auto from_file = http::read_api_key_file(f.api_key_file);
        if (!from_file.ok()) {
            std::cerr << "error: " << from_file.err().message << " (--api-key-file)\n";
            return 2;
        }
        f.api.api_keys.insert(f.api.api_keys.end(), from_file->begin(), from_file->end());
    }
    if (auto st = api::check_api_keys(f.api.api_keys); !st) {
        std::cerr << "error: " << st.err().message << " (--api-key, --api-keys, RUSTYCAGE_API_KEYS)\n";
        return 2;
    }
    f.listen.max_body_bytes = static_cast<size_t>(f.max_body_mb) << 20;
    f.listen.header_timeout = std::chrono::milliseconds(static_cast<long long>(f.header_timeout_s * 1000));
    llama::template_limits templates = llama::current_template_limits();
    templates.max_time = std::chrono::milliseconds(static_cast<long long>(f.template_timeout_s * 1000));
    llama::set_template_limits(templates);

    // Signals are taken synchronously by this thread; every thread started below inherits the mask.
    sigset_t signals = block_stop_signals();
    const pid_t parent = getppid();
    return_large_allocations();

    llama::model_load_options load;
    load.n_gpu_layers = f.eng.n_gpu_layers;
    models::manager_options mopts;
    mopts.memory_budget = models::default_memory_budget();
    if (!f.memory_budget.empty()) {
        auto b = parse_byte_size(f.memory_budget);
        if (!b) {
            std::cerr << "error: --memory-budget '" << f.memory_budget << "' is not a size like 12GiB or 0\n";
            return 2;
        }
        mopts.memory_budget = *b;
    }
    if (!f.device_memory.empty() || !f.fit_margin.empty()) {
        auto cap = parse_byte_size(f.device_memory.empty() ? "0" : f.device_memory);
        auto margin = parse_byte_size(f.fit_margin.empty() ? "0" : f.fit_margin);
        if (!cap || !margin) {
            std::cerr << "error: " << (cap ? "--fit-margin '" + f.fit_margin : "--device-memory '" + f.device_memory) << "' is not a size like 8GiB or 512MiB\n";
            return 2;
        }
        mopts.fit.device_memory = *cap;
        if (!f.fit_margin.empty()) mopts.fit.margin = static_cast<int64_t>(*margin);
    }
    mopts.fit.ctx_set = f.eng.ctx_size && f.eng.ctx_size->count() > 0;
    if (f.max_tokens && f.max_tokens->count() > 0) mopts.fit.max_tokens = f.api.max_tokens_cap;
    auto ka = api::ollama::parse_go_duration(f.keep_alive);
    if (!ka) {
        std::cerr << "error: --keep-alive '" << f.keep_alive << "' is not a duration like 5m, 1h30m or -1\n";
        return 2;
    }
    mopts.default_keep_alive = ka->count() < 0 ? std::chrono::nanoseconds::max() : *ka;
    f.eng.engine.kv.events = std::make_shared<kv::kv_event_log>();  // GET /v1/kv/events (the fleet gateway's block index)
    models::model_manager manager(models::local_catalog(f.eng.models_dir), f.eng.engine, load, mopts);
    auto preloads = plan_preloads(f.preload, manager);
    if (!preloads) {
        std::cerr << "error: " << preloads.err().message << " (--preload)\n";
        return 2;
    }
    f.api.version = running_version();
    f.api.llama_commit = RUSTYCAGE_LLAMA_COMMIT;
    f.api.n_parallel = f.eng.engine.n_parallel;
    api::ui::fleet_source fleet;
    if (!f.fleet.endpoints.empty()) {
        auto etcd = open_etcd(f.fleet);
        if (!etcd) {
            std::cerr << "error: " << etcd.err().message << " (--fleet-etcd, --fleet-prefix)\n";
            return 1;
        }
        auto feed = std::make_shared<fleet::console_feed>(std::move(etcd.value()), keys_for(f.fleet));
        fleet = [feed] { return feed->document(); };
    }
    api::api_server server(manager, f.api, std::move(fleet));
    // Preloads start before the ports open, so no health check sees a ready server without them.
    std::atomic<bool> preload_failed{false};
    preloader preloading(manager, std::move(preloads.value()), server.startup(), [&preload_failed] {
        preload_failed = true;
        ::kill(::getpid(), SIGTERM);  // the main thread's sigwait takes it: a graceful stop
    });
    if (auto st = server.start(f.listen); !st) {
        std::cerr << "error: " << st.err().message << "\n";
        return 1;
    }
    // One machine-readable line: scripts and tests read the bound ports from it.
    std::cout << "rustycage listening openai=http://" << f.listen.host << ":" << server.openai_port();
    if (server.ollama_port() > 0) std::cout << " ollama=http://" << f.listen.host << ":" << server.ollama_port();
    std::cout << " models=" << f.eng.models_dir << std::endl;

    siginfo_t info{};
    while (sigwaitinfo(&signals, &info) < 0) {}
    const bool from_parent = repeats_parent_death(info, parent);
    rc::log::info("serve", "stopping", {{"signal", info.si_signo}, {"from", !from_parent ? "a signal" : getppid() != parent ? "the parent's death" : "the parent"}});
    preloading.stop();
    const int code = stop_within(server, signals, f.shutdown_timeout_s, from_parent ? parent : 0);
    return preload_failed ? 1 : code;
}

}  // namespace

void register_serve(CLI::App & app, std::function<int()> & action) {
    auto f = std::make_shared<serve_flags>();
    auto * cmd = app.add_subcommand("serve", "Serve the OpenAI and Ollama APIs, health and metrics");
    cmd->add_option("--host", f->listen.host, "Address to bind")->envname("RUSTYCAGE_HOST")->capture_default_str();
    cmd->add_option("--openai-port", f->listen.openai_port, "Port for OpenAI clients (0: any free port)")
        ->envname("RUSTYCAGE_OPENAI_PORT")->check(CLI::Range(0, 65535))->capture_default_str();
    cmd->add_option("--ollama-port", f->listen.ollama_port, "Port for Ollama clients (0: any free port, -1: none)")
        ->envname("RUSTYCAGE_OLLAMA_PORT")->check(CLI::Range(-1, 65535))->capture_default_str();
    add_engine_flags(*cmd, f->eng);
    cmd->add_option("--api-key", f->api.api_keys, "Require this bearer key (repeatable; visible in ps: prefer --api-key-file); health stays public");
    cmd->add_option("--api-key-file", f->api_key_file,
                    "Require the bearer keys in this file, one per line (a regular file only its owner can read, at most 64 KiB)")
        ->envname("RUSTYCAGE_API_KEY_FILE");
    auto * keys = cmd->add_option("--api-keys", f->api_keys_env, "Comma-separated API keys")->envname("RUSTYCAGE_API_KEYS");
    f->max_tokens = cmd->add_option("--max-tokens", f->api.max_tokens_cap,
                                    "Upper bound for a request's max_tokens (when given, also the smallest context pool the device fit may choose)")
        ->envname("RUSTYCAGE_MAX_TOKENS")->check(CLI::Range(1, 1 << 24))->capture_default_str();
    cmd->add_option("--max-body-mb", f->max_body_mb, "Largest accepted request body, MiB")->check(CLI::Range(1, 4096))->capture_default_str();
    cmd->add_option("--preload", f->preload,
                    "Load these models before reporting ready (repeatable); 'auto': also those the KV disk tier holds recent "
                    "conversations for, as many as the memory budget holds")
        ->envname("RUSTYCAGE_PRELOAD")->delimiter(',');
    cmd->add_option("--memory-budget", f->memory_budget,
                    "System memory all loaded models may take together, e.g. 12GiB (default: 80% of RAM; 0: no limit); idle models are unloaded to make room")
        ->envname("RUSTYCAGE_MEMORY_BUDGET");
    cmd->add_option("--device-memory", f->device_memory,
                    "What the fit takes each device to hold, e.g. 8GiB (default: what the devices report free; on a CPU build "
                    "without it, no fit). Layers and the context pool are fitted to it at each load; the KV tiers hold the rest")
        ->envname("RUSTYCAGE_DEVICE_MEMORY");
    cmd->add_option("--fit-margin", f->fit_margin, "Device memory the fit leaves free (default: 1GiB, at most an eighth of the device)")
        ->envname("RUSTYCAGE_FIT_MARGIN");
    cmd->add_option("--keep-alive", f->keep_alive, "How long an idle model stays loaded: 5m, 1h30m, 0 (unload at once), -1 (forever)")
        ->envname("RUSTYCAGE_KEEP_ALIVE")->capture_default_str();
    cmd->add_option("--max-queue", f->eng.engine.max_queue, "Requests a model may hold waiting; more get 503 + Retry-After")
        ->envname("RUSTYCAGE_MAX_QUEUE")->check(CLI::Range(1, 1 << 20))->capture_default_str();
    cmd->add_option("--max-connections", f->listen.max_connections, "Open connections per port (each holds a thread); more are answered 503")
        ->envname("RUSTYCAGE_MAX_CONNECTIONS")->check(CLI::Range(1, 65536))->capture_default_str();
    cmd->add_option("--header-timeout", f->header_timeout_s, "Seconds a request's header block may take to arrive; slower clients get 408 and are disconnected")
        ->envname("RUSTYCAGE_HEADER_TIMEOUT")->check(CLI::Range(0.1, 3600.0))->capture_default_str();
    cmd->add_option("--template-timeout", f->template_timeout_s,
                    "Seconds one chat-template render may take (a model's own or a client's template); longer is a 400 naming the limit")
        ->envname("RUSTYCAGE_TEMPLATE_TIMEOUT")->check(CLI::Range(0.1, 600.0))->capture_default_str();
    cmd->add_option("--shutdown-timeout", f->shutdown_timeout_s, "Seconds in-flight requests get to finish after SIGTERM/SIGINT before the process exits anyway")
        ->envname("RUSTYCAGE_SHUTDOWN_TIMEOUT")->check(CLI::Range(0.0, 3600.0))->capture_default_str();
    f->fleet.endpoints.clear();
    cmd->add_option("--fleet-etcd", f->fleet.endpoints, "etcd members of this host's fleet, for the console's Fleet page (the agent passes its own)")
        ->envname("RUSTYCAGE_FLEET_ETCD");
    cmd->add_option("--fleet-prefix", f->fleet.prefix, "The fleet's key prefix in etcd")->envname("RUSTYCAGE_FLEET_PREFIX")->capture_default_str();
    add_etcd_flags(*cmd, f->fleet, "fleet-etcd");
    cmd->callback([f, keys, &action] {
        f->api_keys_given = keys->count() > 0 || std::getenv("RUSTYCAGE_API_KEYS") != nullptr;
        action = [f] { return serve(*f); };
    });
}

}  // namespace rc::cli
