// `rustycage pull --curated`: the curated model set (share/curated.json), sized from the Hub's own
// listing and chosen by what fits the server's memory budget on this host.
#include "cli_pull_curated.h"

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "commands.h"
#include "hub/hub_client.h"
#include "models/curated_catalog.h"
#include "models/memory_estimate.h"
#include "util/byte_size.h"

namespace rc::cli {

namespace {

std::string join(const std::vector<std::string> & items) {
    std::string out;
    for (const auto & s : items) out += (out.empty() ? "" : ",") + s;
    return out;
}

std::vector<std::string> split_uses(const std::vector<std::string> & given) {
    std::vector<std::string> out;
    for (const auto & g : given) {
        size_t start = 0;
        while (start <= g.size()) {
            size_t comma = g.find(',', start);
            if (comma == std::string::npos) comma = g.size();
            if (comma > start) out.push_back(g.substr(start, comma - start));
            start = comma + 1;
        }
    }
    return out;
}

void print_plan(const std::vector<models::sized_model> & sized, uint64_t memory, const models::fit_choice & choice) {
    text_table t({"NAME", "USES", "SIZE", "NEEDS", "FITS", "PULL"});
    for (const auto & s : sized) {
        const bool chosen = std::find(choice.picks.begin(), choice.picks.end(), &s) != choice.picks.end();
        t.add({s.model->name, join(s.model->uses), s.size ? format_byte_size(s.size) : "?", s.size ? format_byte_size(s.need) : "?",
               s.size == 0 ? "?" : (s.need <= memory ? "yes" : "no"), chosen ? "yes" : ""});
    }
    t.print(std::cout);
    for (const auto & s : sized)
        if (!s.problem.empty()) std::cerr << "warning: " << s.model->name << ": " << s.problem << '\n';
}

}  // namespace

void add_curated_flags(CLI::App & cmd, curated_flags & f) {
    auto * curated = cmd.add_flag("--curated", f.enabled, "Pull from the curated model set what fits this host (instead of a NAME)");
    cmd.add_option("--fit", f.fit, "auto: per use, the best model that fits the memory; or a catalog NAME")->needs(curated);
    cmd.add_option("--use", f.uses, "Only these uses (chat, code, embedding, triage; comma-separated or repeated)")->needs(curated);
    cmd.add_option("--memory", f.memory, "Memory to fit into (default: the server's default --memory-budget on this host)")->needs(curated);
    cmd.add_option("--catalog", f.catalog, "Curated catalog (default: share/rustycage/curated.json of this installation)")
        ->envname("RUSTYCAGE_CURATED_CATALOG");  // no needs(): the variable may be set for plain pulls too
    cmd.add_flag("--dry-run", f.dry_run, "Print the plan, pull nothing")->needs(curated);
}

std::string default_curated_catalog() {
    std::error_code ec;
    auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) return "share/rustycage/curated.json";
    return (exe.parent_path().parent_path() / "share" / "rustycage" / "curated.json").string();
}

int pull_curated(const store_flags & store, const curated_flags & f, const std::function<int(const std::string & name)> & pull_one) {
    if (!apply_log_level(store.log_level)) return 2;
    const std::string path = f.catalog.empty() ? default_curated_catalog() : f.catalog;
    auto catalog = models::load_curated_catalog(path);
    if (!catalog) return fail(catalog.err());
    const auto uses = split_uses(f.uses);
    for (const auto & u : uses)
        if (std::find(std::begin(models::curated_uses), std::end(models::curated_uses), u) == std::end(models::curated_uses))
            return fail("unknown use '" + u + "' (chat, code, embedding, triage)");
    uint64_t memory = 0;
    if (!f.memory.empty()) {
        auto m = parse_byte_size(f.memory);
        if (!m || *m == 0) return fail("--memory: '" + f.memory + "' is not a size like 16GiB");
        memory = *m;
    } else {
        memory = models::default_memory_budget();
        // Served fast means on the device: a GPU host picks by 90% of its devices' memory.
        if (uint64_t gpu = models::gpu_memory_bytes(); gpu > 0) memory = std::min(memory, gpu / 10 * 9);
        if (memory == 0) return fail("cannot tell this host's memory: give --memory SIZE");
    }
    const models::curated_model * named = nullptr;
    if (f.fit != "auto") {
        named = catalog->find(f.fit);
        if (!named) return fail("--fit: '" + f.fit + "' is neither auto nor a model of " + path);
    }
    auto cfg = hub::config_from_env();
    if (!cfg) return fail(cfg.err());
    hub::hub_client hub(cfg.value());

    std::vector<models::sized_model> sized;
    for (const auto & m : catalog->models)
        if (named ? &m == named : (uses.empty() || std::any_of(uses.begin(), uses.end(), [&](const std::string & u) { return m.serves(u); })))
            sized.push_back(models::size_curated(hub, m));
    std::cout << "memory to fit: " << format_byte_size(memory) << '\n';
    models::fit_choice choice;
    if (named) {
        if (sized.front().size == 0) return fail(named->name + ": " + sized.front().problem);
        choice.picks.push_back(&sized.front());
        if (sized.front().need > memory)
            std::cerr << "warning: " << named->name << " needs about " << format_byte_size(sized.front().need) << ", more than "
                      << format_byte_size(memory) << ": it may not load on this host\n";
    } else {
        choice = models::choose_fit(sized, memory, uses);
    }
    print_plan(sized, memory, choice);
    for (const auto & u : choice.unmet) std::cerr << "warning: no curated " << u << " model fits " << format_byte_size(memory) << '\n';
    if (choice.picks.empty()) return fail("nothing in the curated set fits " + format_byte_size(memory));
    if (f.dry_run) return 0;

    int status = 0;
    for (const auto * s : choice.picks) {
        std::cout << "pulling " << s->model->name << " (" << s->model->pull_name() << ")\n" << std::flush;
        const int rc = pull_one(s->model->pull_name());
        if (rc >= 128) return rc;  // interrupted: stop here, the next run resumes
        if (rc != 0) status = rc;
    }
    return status;
}

}  // namespace rc::cli
