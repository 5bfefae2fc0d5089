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
#include <sstream>

#include "bench_scenarios.h"

using rc::bench::scenario_def;
using json = nlohmann::ordered_json;

namespace {

void usage(std::ostream & os) {
    os << "usage: rc-bench SCENARIO --target NAME=http://HOST:PORT [--target ...] --model NAME\n"
          "                [--reps 5] [--warmup 0] [--rep-offset 0] [--seed 1] [--variant TEXT] [--out FILE]\n"
          "                [--ban-tokens 2,3-258] [--reset-slots NAME:N ...] [--SCENARIO-OPTION VALUE ...]\n\n"
          "--ban-tokens: token ids (and ranges) given logit_bias -100; 'none' for none. The default is\n"
          "bench-1b's end token (every run generates max_tokens) and its byte-fallback tokens <0x00>..<0xFF>\n"
          "(a stream cut inside a UTF-8 character makes llama-server at the pinned commit fail the request\n"
          "with 'does not match the expected Content-only format').\n"
          "--variant labels the results (default: the options given).\n"
          "--reset-slots NAME:N: before every repetition on target NAME, erase llama-server slots 0..N-1\n"
          "(POST /slots/ID?action=erase; the server needs --slot-save-path), so idle slots' old prompts\n"
          "do not stay in a unified KV cache and every repetition starts from the same empty state.\n\n"
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
    int reps = 5, warm = 0, rep_offset = 0;
    std::vector<int> banned;
    std::string ban_spec = "2,3-258";
    long seed = 1;
    std::map<std::string, double> opt;
    std::map<std::string, int> reset_slots;
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
            } else if (k == "reset-slots") {
                auto colon = v.rfind(':');
                if (colon == std::string::npos) throw std::invalid_argument(v);
                reset_slots[v.substr(0, colon)] = std::stoi(v.substr(colon + 1));
            } else if (k == "model") model = v;
            else if (k == "variant") variant = v;
            else if (k == "out") out_path = v;
            else if (k == "reps") reps = std::stoi(v);
            else if (k == "warmup") warm = std::stoi(v);
            else if (k == "rep-offset") rep_offset = std::stoi(v);
            else if (k == "seed") seed = std::stol(v);
            else if (k == "ban-tokens") ban_spec = v;
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
    if (ban_spec != "none") {
        std::stringstream ss(ban_spec);
        std::string item;
        try {
            while (std::getline(ss, item, ',')) {
                auto dash = item.find('-');
                int lo = std::stoi(item.substr(0, dash)), hi = dash == std::string::npos ? lo : std::stoi(item.substr(dash + 1));
                for (int id = lo; id <= hi; ++id) banned.push_back(id);
            }
        } catch (const std::exception &) {
            std::cerr << "rc-bench: error: --ban-tokens must be ids and ranges like 2,3-258, or none\n";
            return 2;
        }
    }

    std::ofstream out;
    if (!out_path.empty()) {
        out.open(out_path, std::ios::app);
        if (!out) {
            std::cerr << "rc-bench: error: cannot open " << out_path << "\n";
            return 2;
        }
    }

    auto ctx_for = [&](const rc::bench::target & t, const std::string & rep_key) {
        return rc::bench::rep_context{t, model, banned, opt,
                                      name + "/" + variant + "/" + std::to_string(seed) + "/" + rep_key, {}};
    };
    int failures = 0;
    auto reset = [&](const rc::bench::target & t) {
        auto it = reset_slots.find(t.name);
        if (it == reset_slots.end()) return;
        for (int id = 0; id < it->second; ++id) {
            int st = rc::bench::http_post_status(t, "/slots/" + std::to_string(id) + "?action=erase");
            if (st != 200) {
                std::cerr << "[rc-bench] warning: erasing slot " << id << " of " << t.name << " answered " << st << "\n";
                break;
            }
        }
    };
    for (int w = 0; w < warm; ++w)
        for (const auto & t : targets) {
            reset(t);
            auto r = def->run(ctx_for(t, "warm" + std::to_string(w)));
            if (!r.error.empty()) std::cerr << "[rc-bench] " << name << " warm-up on " << t.name << " failed: " << r.error << "\n";
        }
    for (int rep = rep_offset; rep < rep_offset + reps; ++rep) {
        for (size_t j = 0; j < targets.size(); ++j) {
            const auto & t = targets[(j + static_cast<size_t>(rep)) % targets.size()];
            reset(t);
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
