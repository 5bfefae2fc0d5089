#pragma once
// The `rustycage` subcommands. Each registers its options on a CLI11 subcommand and runs when chosen.
#include <CLI/CLI.hpp>

#include <functional>
#include <string>

#include "engine/engine.h"
#include "util/result.h"

namespace rc::cli {

// Options shared by commands that load models locally (serve, run).
struct engine_flags {
    std::string models_dir;
    engine::engine_options engine;
    int n_gpu_layers = -1;
    std::string log_level = "info";
    std::string kv_disk_dir;
    bool host_budget_given = false;
    CLI::Option * ctx_size = nullptr;  // given (flag or environment): the device fit keeps it unless tiers hold the rest
};
void add_engine_flags(CLI::App & cmd, engine_flags & f);
// Applies the log level; returns false (after printing why) on a bad value.
bool apply_log_level(const std::string & level);
std::string default_models_dir();
// Throws CLI::ValidationError naming `flag` when `text` is not a byte size.
size_t parse_size_flag(const std::string & flag, const std::string & text);
// Fills the KV defaults that depend on the machine (host budget: a quarter of available RAM) and
// on other flags (disk budget when a disk directory is given), and where the step cost model is
// remembered (<models-dir>/.state/step-cost.json).
void resolve_kv_defaults(engine_flags & f);
// Checks at start what would otherwise fail on first use: the models directory and the KV disk
// directory (when set) exist or can be created, are directories and take a file. Errors:
// invalid_argument naming the flag, the path and the reason.
status check_engine_paths(const engine_flags & f);
// Creates `dir` if needed and proves a file can be written there. Errors: invalid_argument
// "<flag> <dir>: <why>".
status check_writable_dir(const std::string & flag, const std::string & dir);

void register_serve(CLI::App & app, std::function<int()> & action);
void register_run(CLI::App & app, std::function<int()> & action);
// Model management, like Ollama's CLI (cli_*.cpp).
void register_pull(CLI::App & app, std::function<int()> & action);
void register_list(CLI::App & app, std::function<int()> & action);
void register_show(CLI::App & app, std::function<int()> & action);
void register_rm(CLI::App & app, std::function<int()> & action);
void register_cp(CLI::App & app, std::function<int()> & action);
void register_create(CLI::App & app, std::function<int()> & action);
void register_search(CLI::App & app, std::function<int()> & action);
void register_ps(CLI::App & app, std::function<int()> & action);
// The fleet (cli_agent.cpp, cli_fleet.cpp, cli_incidents.cpp; src/fleet).
void register_agent(CLI::App & app, std::function<int()> & action);
void register_fleet(CLI::App & app, std::function<int()> & action);
void register_incidents(CLI::App & app, std::function<int()> & action);
void register_version(CLI::App & app, std::function<int()> & action);  // cli_version.cpp
void register_release(CLI::App & app, std::function<int()> & action);  // cli_release.cpp: sign, verify, keygen
void register_gateway(CLI::App & app, std::function<int()> & action);  // cli_gateway.cpp; src/gateway

}  // namespace rc::cli
