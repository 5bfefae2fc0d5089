#pragma once
// The `rustycage` subcommands. Each registers its options on a CLI11 subcommand and runs when chosen.
#include <CLI/CLI.hpp>

#include <functional>
#include <string>

#include "engine/engine.h"

namespace rc::cli {

// Options shared by commands that load models locally (serve, run).
struct engine_flags {
    std::string models_dir;
    engine::engine_options engine;
    int n_gpu_layers = -1;
    std::string log_level = "info";
};
void add_engine_flags(CLI::App & cmd, engine_flags & f);
// Applies the log level; returns false (after printing why) on a bad value.
bool apply_log_level(const std::string & level);
std::string default_models_dir();

void register_serve(CLI::App & app, std::function<int()> & action);
void register_run(CLI::App & app, std::function<int()> & action);

}  // namespace rc::cli
