#pragma once
// Benchmark scenarios: each runs one repetition against one server and returns named metrics.
// To add a scenario (the API and KV-tiering issues do): write a `rep_fn`, add one row to
// `scenario_table()` in bench_scenarios.cpp with its options and defaults, and call it from
// bench/run.sh; bench/report.mjs renders every metric it finds, no change needed there.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_client.h"
#include "bench_stats.h"

namespace rc::bench {

struct metric {
    std::string name;
    double value = 0;
    std::string unit;
    std::string better;  // "higher", "lower" or "none" (informational)
};

struct rep_result {
    std::vector<metric> metrics;
    nlohmann::ordered_json info = nlohmann::ordered_json::object();
    std::string error;  // non-empty: the repetition failed (metrics are not recorded)
};

// Everything a repetition needs. Prompt keys include scenario, variant, seed and repetition, so every
// repetition sends prompts no earlier repetition sent (no accidental cache hits) while every server
// gets the same prompts for the same repetition (identical work).
struct rep_context {
    const target & server;
    std::string model;
    std::vector<int> banned;
    std::map<std::string, double> opt;  // scenario options, defaults filled in
    std::string key;                    // prompt key prefix for this repetition
    prompt_source prompts;

    int i(const std::string & name) const { return static_cast<int>(opt.at(name)); }
    std::vector<int> prompt(const std::string & role, int n) const { return prompts.make(key + "/" + role, n); }
    completion_params params(std::vector<int> prompt_ids, int max_tokens) const {
        completion_params p;
        p.model = model;
        p.prompt = std::move(prompt_ids);
        p.max_tokens = max_tokens;
        p.banned = banned;
        return p;
    }
};

using rep_fn = std::function<rep_result(const rep_context &)>;

struct scenario_def {
    std::string name;
    std::string help;
    std::vector<std::pair<std::string, double>> options;  // name -> default
    rep_fn run;
};

const std::vector<scenario_def> & scenario_table();

}  // namespace rc::bench
