// `rustycage rm NAME...` and `rustycage cp SRC DST`: delete and copy store models. Blobs are shared
// by content, so a copy costs no space and a blob goes only with the last model using it. Loose
// *.gguf files are the user's: rm refuses them (delete the file yourself).
#include <iostream>
#include <memory>

#include "cli_common.h"
#include "commands.h"
#include "models/local_catalog.h"
#include "store/model_name.h"

namespace rc::cli {

namespace {

struct rm_flags {
    store_flags store;
    std::vector<std::string> names;
};

struct cp_flags {
    store_flags store;
    std::string src;
    std::string dst;
};

// The error for a name the store does not have: a loose file gets its own explanation.
error not_in_store(const models::local_catalog & catalog, const std::string & name, const std::string & loose_hint) {
    auto parsed = store::model_name::parse(name);
    auto e = catalog.find(name);
    if (e && !e->from_store) return make_error(errc::invalid_argument, "'" + name + "' is the file " + e->path.string() + ", not a store model: " + loose_hint);
    if (!parsed) return parsed.err();
    return make_error(errc::not_found, "model '" + name + "' not found in " + catalog.dir().string());
}

int rm(const rm_flags & f) {
    if (!apply_log_level(f.store.log_level)) return 2;
    models::local_catalog catalog(f.store.models_dir);
    int failed = 0;
    for (const auto & name : f.names) {
        auto parsed = store::model_name::parse(name);
        if (parsed) {
            auto s = catalog.store().remove(name);
            if (s) {
                std::cout << "deleted " << parsed->display() << "\n";
                continue;
            }
            if (s.err().code != errc::not_found) {
                failed += fail(s.err());
                continue;
            }
        }
        failed += fail(not_in_store(catalog, name, "delete the file yourself (rustycage does not delete files it did not create)"));
    }
    return failed ? 1 : 0;
}

int cp(const cp_flags & f) {
    if (!apply_log_level(f.store.log_level)) return 2;
    // Both names first, so a bad destination is refused even when the source is missing.
    for (const auto * n : {&f.src, &f.dst}) {
        if (auto parsed = store::model_name::parse(*n); !parsed) return fail(parsed.err());
    }
    models::local_catalog catalog(f.store.models_dir);
    auto s = catalog.store().copy(f.src, f.dst);
    if (!s) {
        if (s.err().code != errc::not_found) return fail(s.err());
        return fail(not_in_store(catalog, f.src, "import it with `rustycage create " + f.dst + " --from " + f.src + "`"));
    }
    std::cout << "copied " << store::model_name::parse(f.src)->display() << " to " << store::model_name::parse(f.dst)->display() << "\n";
    return 0;
}

}  // namespace

void register_rm(CLI::App & app, std::function<int()> & action) {
    auto f = std::make_shared<rm_flags>();
    auto * cmd = app.add_subcommand("rm", "Delete models from the store (their blobs go when no other model uses them)");
    cmd->add_option("names", f->names, "Models to delete")->required();
    add_store_flags(*cmd, f->store);
    cmd->callback([f, &action] { action = [f] { return rm(*f); }; });
}

void register_cp(CLI::App & app, std::function<int()> & action) {
    auto f = std::make_shared<cp_flags>();
    auto * cmd = app.add_subcommand("cp", "Copy a store model to a new name (shares its blobs)");
    cmd->add_option("source", f->src, "Model to copy")->required();
    cmd->add_option("destination", f->dst, "New name (replaced if it exists)")->required();
    add_store_flags(*cmd, f->store);
    cmd->callback([f, &action] { action = [f] { return cp(*f); }; });
}

}  // namespace rc::cli
