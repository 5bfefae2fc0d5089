// `rustycage search TEXT`: GGUF repositories on the Hugging Face Hub, most downloaded first, with
// the quantizations their files offer (pull one with `rustycage pull hf.co/REPO:QUANT`).
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "commands.h"
#include "hub/hub_client.h"

namespace rc::cli {

namespace {

struct search_flags {
    std::string text;
    int limit = 20;
    bool json = false;
};

std::string join(const std::vector<std::string> & items, const char * sep) {
    std::string out;
    for (const auto & s : items) out += (out.empty() ? "" : sep) + s;
    return out;
}

int search(const search_flags & f) {
    auto cfg = hub::config_from_env();
    if (!cfg) return fail(cfg.err());
    auto hits = hub::hub_client(cfg.value()).search(f.text, f.limit);
    if (!hits) return fail(hits.err());
    if (f.json) {
        auto out = nlohmann::ordered_json::array();
        for (const auto & h : *hits) out.push_back({{"repo", h.id}, {"downloads", h.downloads}, {"likes", h.likes}, {"quants", h.quants}});
        std::cout << out.dump(2) << "\n";
        return 0;
    }
    if (hits->empty()) {
        std::cerr << "no GGUF repository matches '" << f.text << "'\n";
        return 0;
    }
    text_table table({"REPO", "DOWNLOADS", "LIKES", "QUANTS"});
    for (const auto & h : *hits) table.add({h.id, std::to_string(h.downloads), std::to_string(h.likes), join(h.quants, ", ")});
    table.print(std::cout);
    return 0;
}

}  // namespace

void register_search(CLI::App & app, std::function<int()> & action) {
    auto f = std::make_shared<search_flags>();
    auto * cmd = app.add_subcommand("search", "Search the Hugging Face Hub for GGUF models");
    cmd->add_option("text", f->text, "Text the repository name contains")->required();
    cmd->add_option("--limit", f->limit, "Most repositories to list")->check(CLI::Range(1, 1000))->capture_default_str();
    cmd->add_flag("--json", f->json, "Print a JSON array instead of a table");
    cmd->footer("Environment: HF_ENDPOINT (a Hub mirror), HF_TOKEN.");
    cmd->callback([f, &action] { action = [f] { return search(*f); }; });
}

}  // namespace rc::cli
