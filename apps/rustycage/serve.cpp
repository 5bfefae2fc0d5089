// `rustycage serve`: the OpenAI + Ollama + health API on two ports, models loaded on demand.
#include <csignal>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

#include "api/api_server.h"
#include "api/ollama/keep_alive.h"
#include "commands.h"
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
    std::vector<std::string> preload;
    int max_body_mb = 32;
    std::string memory_budget;  // empty: 80% of physical RAM
    std::string keep_alive = "5m";
};

std::vector<std::string> split_keys(const std::string & s) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ',')) {
        if (!item.empty()) out.push_back(item);
    }
    return out;
}

int serve(serve_flags & f) {
    if (!apply_log_level(f.eng.log_level)) return 2;
    resolve_kv_defaults(f.eng);
    std::error_code ec;
    std::filesystem::create_directories(f.eng.models_dir, ec);
    if (!std::filesystem::is_directory(f.eng.models_dir)) {
        std::cerr << "error: models directory " << f.eng.models_dir << " does not exist and cannot be created\n";
        return 1;
    }
    for (const auto & k : split_keys(f.api_keys_env)) f.api.api_keys.push_back(k);
    f.listen.max_body_bytes = static_cast<size_t>(f.max_body_mb) << 20;

    // Signals are taken synchronously by this thread; every thread started below inherits the mask.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    std::signal(SIGPIPE, SIG_IGN);

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
    auto ka = api::ollama::parse_go_duration(f.keep_alive);
    if (!ka) {
        std::cerr << "error: --keep-alive '" << f.keep_alive << "' is not a duration like 5m, 1h30m or -1\n";
        return 2;
    }
    mopts.default_keep_alive = ka->count() < 0 ? std::chrono::nanoseconds::max() : *ka;
    models::model_manager manager(models::local_catalog(f.eng.models_dir), f.eng.engine, load, mopts);
    for (const auto & name : f.preload) {
        auto e = manager.acquire(name);
        if (!e) {
            std::cerr << "error: cannot preload '" << name << "': " << e.err().message << "\n";
            return 1;
        }
    }
    f.api.version = RUSTYCAGE_VERSION;
    f.api.llama_commit = RUSTYCAGE_LLAMA_COMMIT;
    f.api.n_parallel = f.eng.engine.n_parallel;
    api::api_server server(manager, f.api);
    if (auto st = server.start(f.listen); !st) {
        std::cerr << "error: " << st.err().message << "\n";
        return 1;
    }
    // One machine-readable line: scripts and tests read the bound ports from it.
    std::cout << "rustycage listening openai=http://" << f.listen.host << ":" << server.openai_port();
    if (server.ollama_port() > 0) std::cout << " ollama=http://" << f.listen.host << ":" << server.ollama_port();
    std::cout << " models=" << f.eng.models_dir << std::endl;

    int sig = 0;
    sigwait(&signals, &sig);
    rc::log::info("serve", "stopping", {{"signal", sig}});
    server.stop();
    return 0;
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
    cmd->add_option("--api-key", f->api.api_keys, "Require this bearer key (repeatable); health stays public");
    cmd->add_option("--api-keys", f->api_keys_env, "Comma-separated API keys")->envname("RUSTYCAGE_API_KEYS");
    cmd->add_option("--max-tokens", f->api.max_tokens_cap, "Upper bound for a request's max_tokens")
        ->envname("RUSTYCAGE_MAX_TOKENS")->check(CLI::Range(1, 1 << 24))->capture_default_str();
    cmd->add_option("--max-body-mb", f->max_body_mb, "Largest accepted request body, MiB")->check(CLI::Range(1, 4096))->capture_default_str();
    cmd->add_option("--preload", f->preload, "Load these models at start (repeatable)");
    cmd->add_option("--memory-budget", f->memory_budget,
                    "Memory all loaded models may take together, e.g. 12GiB (default: 80% of RAM, and at most 90% of GPU memory on a GPU build; 0: no limit); idle models are unloaded to make room")
        ->envname("RUSTYCAGE_MEMORY_BUDGET");
    cmd->add_option("--keep-alive", f->keep_alive, "How long an idle model stays loaded: 5m, 1h30m, 0 (unload at once), -1 (forever)")
        ->envname("RUSTYCAGE_KEEP_ALIVE")->capture_default_str();
    cmd->add_option("--max-queue", f->eng.engine.max_queue, "Requests a model may hold waiting; more get 503 + Retry-After")
        ->envname("RUSTYCAGE_MAX_QUEUE")->check(CLI::Range(1, 1 << 20))->capture_default_str();
    cmd->callback([f, &action] { action = [f] { return serve(*f); }; });
}

}  // namespace rc::cli
