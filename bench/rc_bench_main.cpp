// rc-bench: a small load client for OpenAI-compatible completion servers (Rustycage, llama-server).
//
//   rc-bench SCENARIO --target NAME=http://HOST:PORT [--target ...] --model NAME [options]
//
// Runs `--reps` repetitions of the scenario against every target, interleaved (rep 1 on each target,
// then rep 2, ...; the order rotates), and appends one JSON line per (target, repetition) to --out.
// Exit status: 0 all repetitions succeeded, 1 some failed (recorded with "ok": false), 2 bad usage.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "bench_scenarios.h"

using rc::bench::scenario_def;
using json = nlohmann::ordered_json;

namespace {

void usage(std::ostream & os) {
    os << "usage: rc-bench SCENARIO --target NAME=http://HOST:PORT [--target ...] --model NAME\n"
          "                [--reps 5] [--warmup 0] [--rep-offset 0] [--seed 1] [--variant TEXT] [--out FILE]\n"
          "                [--ban-token 2] [--SCENARIO-OPTION VALUE ...]\n\n"
          "--ban-token: token id given logit_bias -100 (the model's end token) so every run generates\n"
          "max_tokens; -1 turns it off. --variant labels the results (default: the options given).\n\n"
          "scenarios:\n";
    for (const auto & s : rc::bench::scenario_table()) {
        os << "  " << s.name << ": " << s.help << "\n     ";
        for (const auto & [k, v] : s.options) os << " --" << k << " " << v;
        os << "\n";
    }
}

std::string fmt_num(double v) {
    char b[64];
    std::snprintf(b, sizeof b, "%g", v);
    return b;
}

}  // namespace

int main(int argc, char ** argv) {
    if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
        usage(argc < 2 ? std::cerr : std::cout);
        return argc < 2 ? 2 : 0;
    }
    const std::string name = argv[1];
    const scenario_def * def = nullptr;
    for (const auto & s : rc::bench::scenario_table())
        if (s.name == name) def = &s;
    if (!def) {
        std::cerr << "rc-bench: error: unknown scenario '" << name << "'\n";
        usage(std::cerr);
        return 2;
    }

    std::vector<rc::bench::target> targets;
    std::string model = "bench-1b", variant, out_path;
    int reps = 5, warm = 0, rep_offset = 0, ban = 2;
    long seed = 1;
    std::map<std::string, double> opt;
    for (const auto & [k, v] : def->options) opt[k] = v;
    std::string given;
    for (int i = 2; i < argc; ++i) {
        std::string a = argv[i];
        if (a.rfind("--", 0) != 0 || i + 1 >= argc) {
            std::cerr << "rc-bench: error: expected --option VALUE, got '" << a << "'\n";
            return 2;
        }
        std::string v = argv[++i];
        std::string k = a.substr(2);
        try {
            if (k == "target") {
                rc::bench::target t;
                if (!rc::bench::parse_target(v, t)) {
                    std::cerr << "rc-bench: error: --target must be NAME=http://HOST:PORT, got '" << v << "'\n";
                    return 2;
                }
                targets.push_back(t);
            } else if (k == "model") model = v;
            else if (k == "variant") variant = v;
            else if (k == "out") out_path = v;
            else if (k == "reps") reps = std::stoi(v);
            else if (k == "warmup") warm = std::stoi(v);
            else if (k == "rep-offset") rep_offset = std::stoi(v);
            else if (k == "seed") seed = std::stol(v);
            else if (k == "ban-token") ban = std::stoi(v);
            else if (opt.count(k)) {
                opt[k] = std::stod(v);
                given += (given.empty() ? "" : ",") + k + "=" + v;
            } else {
                std::cerr << "rc-bench: error: unknown option --" << k << " for scenario " << name << "\n";
                return 2;
            }
        } catch (const std::exception &) {
            std::cerr << "rc-bench: error: bad value '" << v << "' for --" << k << "\n";
            return 2;
        }
    }
    if (targets.empty()) {
        std::cerr << "rc-bench: error: at least one --target is required\n";
        return 2;
    }
    if (variant.empty()) variant = given.empty() ? "default" : given;

    std::ofstream out;
    if (!out_path.empty()) {
        out.open(out_path, std::ios::app);
        if (!out) {
            std::cerr << "rc-bench: error: cannot open " << out_path << "\n";
            return 2;
        }
    }

    auto ctx_for = [&](const rc::bench::target & t, const std::string & rep_key) {
        return rc::bench::rep_context{t, model, ban, opt,
                                      name + "/" + variant + "/" + std::to_string(seed) + "/" + rep_key, {}};
    };
    int failures = 0;
    for (int w = 0; w < warm; ++w)
        for (const auto & t : targets) {
            auto r = def->run(ctx_for(t, "warm" + std::to_string(w)));
            if (!r.error.empty()) std::cerr << "[rc-bench] " << name << " warm-up on " << t.name << " failed: " << r.error << "\n";
        }
    for (int rep = rep_offset; rep < rep_offset + reps; ++rep) {
        for (size_t j = 0; j < targets.size(); ++j) {
            const auto & t = targets[(j + static_cast<size_t>(rep)) % targets.size()];
            auto r = def->run(ctx_for(t, std::to_string(rep)));
            json line = {{"scenario", name}, {"variant", variant}, {"server", t.name}, {"rep", rep}, {"ok", r.error.empty()}};
            json opts = json::object();
            for (const auto & [k, v] : opt) opts[k] = v;
            line["options"] = opts;
            std::string summary;
            if (r.error.empty()) {
                json m = json::object();
                for (const auto & x : r.metrics) {
                    m[x.name] = {{"value", x.value}, {"unit", x.unit}, {"better", x.better}};
                    summary += " " + x.name + "=" + fmt_num(x.value);
                }
                line["metrics"] = m;
            } else {
                ++failures;
                line["error"] = r.error;
                summary = " FAILED: " + r.error;
            }
            if (!r.info.empty()) line["info"] = r.info;
            std::cerr << "[rc-bench] " << name << " " << variant << " " << t.name << " rep " << rep << ":" << summary << "\n";
            if (out) out << line.dump() << "\n" << std::flush;
        }
    }
    return failures ? 1 : 0;
}
