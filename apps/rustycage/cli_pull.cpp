// `rustycage pull NAME`: download a model from the Hugging Face Hub into the store, check it, mark it
// ready. Ctrl-C stops cleanly (the partial download is kept; the same pull resumes it); a second
// Ctrl-C kills at once.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <memory>

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
};

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
    auto cfg = hub::config_from_env();
    if (!cfg) return fail(cfg.err());
    std::error_code ec;
    std::filesystem::create_directories(f.store.models_dir, ec);
    if (!std::filesystem::is_directory(f.store.models_dir)) return fail("models directory " + f.store.models_dir + " does not exist and cannot be created");

    hub::hub_client hub(cfg.value());
    store::model_store store(f.store.models_dir);
    const bool terminal = isatty(STDERR_FILENO);
    progress_display view(std::cerr, terminal, terminal ? terminal_width(STDERR_FILENO) : 80);
    auto on_progress = [&view](const models::pull_progress & p) {
        if (p.total > 0 && !p.digest.empty()) view.transfer(p.status, p.completed, p.total);
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
    cmd->footer("Environment: HF_ENDPOINT (a Hub mirror), HF_TOKEN (gated or private repositories).");
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
