#pragma once
// Small pieces the model commands (pull, list, show, rm, cp, create, search, ps) share: their common
// flags, plain-text tables, human-readable times and error reporting.
#include <CLI/CLI.hpp>
#include <signal.h>

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace rc::cli {

// Flags of every command that works on the models directory.
struct store_flags {
    std::string models_dir;
    std::string log_level = "warn";  // the store's own info lines (blob_removed, …) are noise here
};
// --models-dir (RUSTYCAGE_MODELS_DIR, default as serve) and --log-level (RUSTYCAGE_LOG_LEVEL).
void add_store_flags(CLI::App & cmd, store_flags & f);

// Prints "error: <message>" to stderr and returns 1 (the exit status of a failed command).
int fail(std::string_view message);
int fail(const error & e);

// Columns left-aligned, separated by three spaces, the header (if any) first (like `ollama list`).
class text_table {
  public:
    text_table() = default;
    explicit text_table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
    void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
    void print(std::ostream & out) const;

  private:
    std::vector<std::vector<std::string>> rows_;
};

using sys_clock = std::chrono::system_clock;

// "3 minutes ago", "About an hour ago", "2 days ago"; for times ahead: "4 minutes from now";
// "Forever" for anything a century or more ahead (keep_alive -1).
std::string relative_time(sys_clock::time_point t, sys_clock::time_point now = sys_clock::now());

// At most `max` characters (bytes), "..." replacing the tail when cut; newlines become spaces.
std::string shorten(std::string_view text, size_t max);

// Ollama's short model ID: the first 12 hex digits of a digest ("sha256-…", "sha256:…" or bare hex).
std::string short_id(std::string_view digest);

// "494.0M", "1.2B": a parameter count as Ollama shows it.
std::string format_parameter_count(uint64_t n);

// SIGINT and SIGTERM blocked on the calling thread (and every thread it starts later), to be taken
// synchronously with sigwait(); SIGPIPE ignored. For the long-running commands (serve, agent, gateway).
sigset_t block_stop_signals();

// For the long-running servers: allocations of 1 MiB and more (request bodies, rendered prompts,
// token lists) get pages of their own and go back to the system when freed. glibc otherwise raises
// that threshold after the first large free and keeps the memory of a 30 MB request in its arenas
// for good; with this, the process returns to its size after a large or hostile request.
void return_large_allocations();

}  // namespace rc::cli
