// `rustycage pull NAME`: download a model from the Hugging Face Hub into the store, check it, mark it
// ready. A dropped or stalled connection, a 5xx or a 429 is retried by itself, each retry shown
// (--retries, --retry-delay, --stall-timeout). Ctrl-C stops cleanly (the partial download is kept; the same pull resumes it); a second
// Ctrl-C kills at once.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string_view>
#include <tuple>

#include "cli_common.h"
#include "cli_pull_curated.h"
#include "commands.h"
#include "hub/hub_client.h"
#include "models/model_puller.h"
#include "progress_bar.h"
#include "store/model_name.h"
#include "util/byte_size.h"

namespace rc::cli {

namespace {

struct pull_flags {
    store_flags store;
    std::string name;
    curated_flags curated;
    // Empty: RUSTYCAGE_PULL_* or the default (hub_config.h).
    std::string retries, retry_delay, stall_timeout;
};

// The hub configuration from the environment, the pull flags on top.
result<hub::hub_config> hub_config_for(const pull_flags & f) {
    auto cfg = hub::config_from_env();
    if (!cfg) return cfg;
    using setter = status (*)(hub::hub_config &, std::string_view, std::string_view);
    for (auto [text, set, flag] : {std::tuple<const std::string &, setter, const char *>{f.retries, hub::set_retries, "--retries"},
                                   {f.retry_delay, hub::set_retry_delay, "--retry-delay"},
                                   {f.stall_timeout, hub::set_stall_timeout, "--stall-timeout"}}) {
        if (text.empty()) continue;
        if (auto st = set(cfg.value(), text, flag); !st) return st.err();
    }
    return cfg;
}

// "retrying (2/8) in 1.4s: connection reset: Recv failure: Connection reset by peer"
std::string retry_line(const models::pull_progress & p) {
    return "retrying (" + std::to_string(p.attempt) + "/" + std::to_string(p.max_attempts) + ") in " +
           hub::format_wait(std::chrono::milliseconds(p.retry_in_ms)) + ": " + p.reason;
}

std::atomic<bool> g_cancel{false};
volatile std::sig_atomic_t g_signal = 0;

void on_stop_signal(int sig) {
    g_signal = sig;
    g_cancel.store(true);
    std::signal(sig, SIG_DFL);  // a second Ctrl-C ends the process at once
}

// SIGINT/SIGTERM set the cancel flag while a pull runs; the previous handlers come back afterwards.
class cancel_on_signals {
  public:
    cancel_on_signals() {
        static_assert(std::atomic<bool>::is_always_lock_free, "the signal handler needs a lock-free flag");
        old_int_ = std::signal(SIGINT, on_stop_signal);
        old_term_ = std::signal(SIGTERM, on_stop_signal);
    }
    ~cancel_on_signals() {
        std::signal(SIGINT, old_int_);
        std::signal(SIGTERM, old_term_);
    }
    cancel_on_signals(const cancel_on_signals &) = delete;
    cancel_on_signals & operator=(const cancel_on_signals &) = delete;

  private:
    void (*old_int_)(int) = SIG_DFL;
    void (*old_term_)(int) = SIG_DFL;
};

int pull(const pull_flags & f) {
    if (!apply_log_level(f.store.log_level)) return 2;
    // The name first: a bad one is refused before anything is touched.
    auto name = store::model_name::parse(f.name);
    if (!name) return fail(name.err());
    auto cfg = hub_config_for(f);
    if (!cfg) return fail(cfg.err());
    std::error_code ec;
    std::filesystem::create_directories(f.store.models_dir, ec);
    if (!std::filesystem::is_directory(f.store.models_dir)) return fail("models directory " + f.store.models_dir + " does not exist and cannot be created");

    hub::hub_client hub(cfg.value());
    store::model_store store(f.store.models_dir);
    const bool terminal = isatty(STDERR_FILENO);
    progress_display view(std::cerr, terminal, terminal ? terminal_width(STDERR_FILENO) : 80);
    auto on_progress = [&view](const models::pull_progress & p) {
        if (p.attempt > 0) view.note(retry_line(p));
        else if (p.total > 0 && !p.digest.empty()) view.transfer(p.status, p.completed, p.total);
        else view.step(p.status);
    };

    result<models::pull_result> r = make_error(errc::internal, "not run");
    {
        cancel_on_signals guard;
        r = models::pull_model(store, hub, f.name, on_progress, &g_cancel);
    }
    view.finish();
    if (!r) {
        if (g_signal != 0) {
            std::cerr << "interrupted: run the same pull again to resume\n";
            return 128 + g_signal;
        }
        fail(r.err());
        const bool hinted = r.err().message.find("resume") != std::string::npos;
        if (r.err().code == errc::unavailable && !hinted) std::cerr << "the partial download is kept: run the same pull again to resume\n";
        return 1;
    }
    std::cout << "pulled " << r->name << " (" << (r->quantization.empty() ? "unknown quantization" : r->quantization) << ", "
              << format_byte_size(r->size) << ")\n";
    return 0;
}

}  // namespace

void register_pull(CLI::App & app, std::function<int()> & action) {
    auto f = std::make_shared<pull_flags>();
    auto * cmd = app.add_subcommand("pull", "Download a model from Hugging Face: hf.co/{owner}/{repo}[:{quantization or file}]");
    auto * name = cmd->add_option("name", f->name, "Model to pull, e.g. hf.co/bartowski/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M");
    add_store_flags(*cmd, f->store);
    add_curated_flags(*cmd, f->curated);
    cmd->add_option("--retries", f->retries,
                    "Attempts after the first when a download's connection drops or stalls, or the Hub answers 5xx or 429; "
                    "counted again after every attempt that brings new bytes (default 7; env RUSTYCAGE_PULL_RETRIES)");
    cmd->add_option("--retry-delay", f->retry_delay,
                    "First wait before retrying, doubled each time up to 30s, with jitter; a Retry-After from the Hub "
                    "is honoured instead, up to 60s (default 1s; env RUSTYCAGE_PULL_RETRY_DELAY)");
    cmd->add_option("--stall-timeout", f->stall_timeout,
                    "A download that receives nothing for this long reconnects where it stopped (default 30s, 0: off; "
                    "env RUSTYCAGE_PULL_STALL_TIMEOUT)");
    cmd->footer("Environment: HF_ENDPOINT (a Hub mirror), HF_TOKEN (gated or private repositories), RUSTYCAGE_PULL_RETRIES, "
                "RUSTYCAGE_PULL_RETRY_DELAY, RUSTYCAGE_PULL_STALL_TIMEOUT.");
    cmd->callback([f, name, &action] {
        if (f->curated.enabled == !name->empty()) throw CLI::ValidationError("pull", "give a model NAME or --curated");
        action = [f] {
            if (!f->curated.enabled) return pull(*f);
            return pull_curated(f->store, f->curated, [f](const std::string & model) {
                pull_flags one = *f;
                one.name = model;
                return pull(one);
            });
        };
    });
}

}  // namespace rc::cli
