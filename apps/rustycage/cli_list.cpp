// `rustycage list` (alias `ls`): every model of the models directory — store models with their
// check status, and loose *.gguf files — as a table or, with --json, a JSON array.
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "commands.h"
#include "model_view.h"
#include "util/byte_size.h"

namespace rc::cli {

namespace {

struct list_flags {
    store_flags store;
    bool json = false;
};

nlohmann::ordered_json entry_json(const models::model_entry & e, const std::string & quant) {
    const std::string hex = digest_hex(e);
    return {{"name", e.name},
            {"id", short_id(hex)},
            {"digest", e.from_store ? "sha256:" + hex : std::string()},
            {"size", e.size_bytes},
            {"quantization", quant},
            {"status", std::string(store::to_string(e.status))},
            {"status_reason", e.status_reason},
            {"modified_at", iso_time(e.modified)},
            {"origin", origin_of(e)},
            {"path", e.path.string()}};
}

int list(const list_flags & f) {
    if (!apply_log_level(f.store.log_level)) return 2;
    const auto entries = models::local_catalog(f.store.models_dir).list();
    if (f.json) {
        auto out = nlohmann::ordered_json::array();
        for (const auto & e : entries) out.push_back(entry_json(e, quantization_of(e)));
        std::cout << out.dump(2) << "\n";
        return 0;
    }
    text_table table({"NAME", "ID", "SIZE", "QUANT", "STATUS", "MODIFIED"});
    const auto now = sys_clock::now();
    for (const auto & e : entries)
        table.add({e.name, short_id(digest_hex(e)), format_byte_size(e.size_bytes), quantization_of(e), status_text(e), relative_time(e.modified, now)});
    table.print(std::cout);
    return 0;
}

}  // namespace

void register_list(CLI::App & app, std::function<int()> & action) {
    auto f = std::make_shared<list_flags>();
    auto * cmd = app.add_subcommand("list", "List the models of the models directory");
    cmd->alias("ls");
    cmd->add_flag("--json", f->json, "Print a JSON array instead of a table");
    add_store_flags(*cmd, f->store);
    cmd->callback([f, &action] { action = [f] { return list(*f); }; });
}

}  // namespace rc::cli
