#pragma once
// `rustycage pull --curated [--fit auto|NAME]`: pulls from the curated model set what fits this
// host (cli_pull_curated.cpp); each pull is an ordinary `rustycage pull`.
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "cli_common.h"

namespace rc::cli {

struct curated_flags {
    bool enabled = false;
    std::string fit = "auto";
    std::vector<std::string> uses;
    std::string memory;
    std::string catalog;
    bool dry_run = false;
};

void add_curated_flags(CLI::App & cmd, curated_flags & f);

// The catalog next to the executable: <bin>/../share/rustycage/curated.json (a release's and the
// build tree's layout alike).
std::string default_curated_catalog();

// Plans, prints the plan, then pulls each chosen model through `pull_one` (the plain pull: progress,
// Ctrl-C, verification against the Hub's SHA-256, quarantine check). Returns the exit status.
int pull_curated(const store_flags & store, const curated_flags & f, const std::function<int(const std::string & name)> & pull_one);

}  // namespace rc::cli
