// `rustycage create NAME`: a store model from GGUF file(s) (`--file`, copied into the blob store),
// from another model (`--from`: a store model's blobs are shared, a loose file is imported), or
// from an Ollama-style Modelfile (`-f`). Template, system prompt and parameters may be set or
// overridden. The new model is checked like a pulled one before it may serve.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli_common.h"
#include "commands.h"
#include "modelfile.h"
#include "models/local_catalog.h"
#include "models/model_creation.h"

namespace rc::cli {

namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

struct create_flags {
    store_flags store;
    std::string name;
    std::vector<std::string> files;
    std::string from;
    std::string modelfile_path;
    std::string template_file;
    std::string system;
    bool system_given = false;
    std::vector<std::string> parameters;  // KEY=VALUE
};

// What the new model is made of, before anything is written.
struct create_plan {
    std::vector<fs::path> files_to_import;  // GGUF parts, in order
    std::string base_model;                 // or a model of the catalog (models::base_from_model)
    store::manifest settings;               // template, system prompt, parameters laid over the base's
};

result<std::string> read_text_file(const fs::path & p, const std::string & what) {
    std::ifstream in(p, std::ios::binary);
    if (!in) return make_error(errc::not_found, "cannot read " + what + " " + p.string());
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// --from / FROM naming a model of the catalog, else a GGUF path.
status plan_from_model(const models::local_catalog & catalog, const std::string & from, create_plan & plan) {
    if (auto e = catalog.find(from)) {
        plan.base_model = from;
        return {};
    } else if (e.err().code != errc::not_found && !fs::is_regular_file(from)) {
        return e.err();
    }
    if (fs::is_regular_file(from)) {
        plan.files_to_import = {fs::path(from)};
        return {};
    }
    return make_error(errc::not_found, "'" + from + "' is neither a model in " + catalog.dir().string() + " nor a file");
}

bool looks_like_path(const std::string & s) {
    return s.ends_with(".gguf") || s.ends_with(".GGUF") || s.starts_with("/") || s.starts_with("./") || s.starts_with("../") || s.starts_with("~");
}

// FROM lines: GGUF paths (relative to the Modelfile) or one model name.
status plan_from_modelfile(const models::local_catalog & catalog, const fs::path & modelfile_path, const modelfile & mf, create_plan & plan) {
    const fs::path base_dir = modelfile_path.parent_path();
    std::vector<fs::path> paths;
    for (const auto & from : mf.from) {
        fs::path p = fs::path(from).is_absolute() ? fs::path(from) : base_dir / from;
        if (fs::is_regular_file(p)) {
            paths.push_back(p);
        } else if (looks_like_path(from)) {
            return make_error(errc::not_found, "FROM " + from + ": no such file " + p.string());
        } else if (mf.from.size() == 1) {
            return plan_from_model(catalog, from, plan);
        } else {
            return make_error(errc::invalid_argument, "FROM " + from + ": several FROM lines must all be the GGUF files of one split model");
        }
    }
    plan.files_to_import = std::move(paths);
    return {};
}

result<create_plan> make_plan(const create_flags & f, const models::local_catalog & catalog) {
    create_plan plan;
    std::optional<modelfile> mf;
    if (!f.modelfile_path.empty()) {
        auto text = read_text_file(f.modelfile_path, "Modelfile");
        if (!text) return text.err();
        auto parsed = parse_modelfile(text.value());
        if (!parsed) return make_error(parsed.err().code, f.modelfile_path + ": " + parsed.err().message);
        mf = std::move(parsed.value());
        if (auto s = plan_from_modelfile(catalog, f.modelfile_path, *mf, plan); !s) return s.err();
    } else if (!f.from.empty()) {
        if (auto s = plan_from_model(catalog, f.from, plan); !s) return s.err();
    } else if (!f.files.empty()) {
        for (const auto & p : f.files) plan.files_to_import.emplace_back(p);
    } else {
        return make_error(errc::invalid_argument, "say what the model is made of: --file PATH.gguf, --from MODEL or -f Modelfile");
    }

    // Settings: the Modelfile's, then the flags'; both over the base model's (create()).
    auto & set = plan.settings;
    if (mf) {
        set.template_text = mf->template_text;
        set.system = mf->system;
        set.parameters = mf->parameters;
    }
    if (!f.template_file.empty()) {
        auto t = read_text_file(f.template_file, "template file");
        if (!t) return t.err();
        set.template_text = t.value();
    }
    if (f.system_given) set.system = f.system;
    ojson flag_params = ojson::object();
    for (const auto & kv : f.parameters) {
        const auto eq = kv.find('=');
        if (eq == std::string::npos) return make_error(errc::invalid_argument, "--parameter '" + kv + "' is not KEY=VALUE");
        if (auto s = add_parameter(flag_params, kv.substr(0, eq), kv.substr(eq + 1)); !s) return s.err();
    }
    for (auto it = flag_params.begin(); it != flag_params.end(); ++it) set.parameters[it.key()] = it.value();
    return plan;
}

int create(const create_flags & f) {
    if (!apply_log_level(f.store.log_level)) return 2;
    auto name = store::model_name::parse(f.name);
    if (!name) return fail(name.err());
    std::error_code ec;
    fs::create_directories(f.store.models_dir, ec);
    if (!fs::is_directory(f.store.models_dir)) return fail("models directory " + f.store.models_dir + " does not exist and cannot be created");
    models::local_catalog catalog(f.store.models_dir);
    store::model_store & st = catalog.store();

    auto plan = make_plan(f, catalog);
    if (!plan) return fail(plan.err());
    if (auto s = models::check_settings(plan->settings); !s) return fail(s.err());  // before copying gigabytes

    auto say = [](const std::string & step) { std::cerr << step << "\n"; };
    auto base = plan->base_model.empty() ? models::base_from_files(st, plan->files_to_import, say) : models::base_from_model(catalog, plan->base_model, say);
    if (!base) return fail(base.err());
    store::manifest m = std::move(base.value());
    const store::manifest & set = plan->settings;
    if (set.template_text) m.template_text = set.template_text;
    if (set.system) m.system = set.system;
    for (auto it = set.parameters.begin(); it != set.parameters.end(); ++it) m.parameters[it.key()] = it.value();
    // The new model is checked beside the old one; only a model that passes replaces it.
    if (auto v = models::create_model(st, *name, std::move(m), say); !v) {
        if (auto now = st.find(*name); now && now->m.status == store::model_status::failed)
            return fail(v.err().message + " (`rustycage show " + name->display() + "` has the incident)");
        return fail(v.err());
    }
    std::cout << "created " << name->display() << " (ready)\n";
    return 0;
}

}  // namespace

void register_create(CLI::App & app, std::function<int()> & action) {
    auto f = std::make_shared<create_flags>();
    auto * cmd = app.add_subcommand("create", "Create a store model from GGUF files, another model or a Modelfile");
    cmd->add_option("name", f->name, "Name of the new model (replaced if it exists)")->required();
    auto * file = cmd->add_option("--file", f->files, "A GGUF file to import (repeat for each part of a split model, in order)")->allow_extra_args(false);
    auto * from = cmd->add_option("--from", f->from, "An existing model (shares its blobs) or a loose GGUF file to import")->excludes(file);
    cmd->add_option("-f,--modelfile", f->modelfile_path, "An Ollama-style Modelfile (FROM, TEMPLATE, SYSTEM, PARAMETER)")->excludes(file)->excludes(from);
    cmd->add_option("--template", f->template_file, "A file holding the chat template (Jinja) to use instead of the GGUF's");
    auto * system = cmd->add_option("--system", f->system, "Default system prompt");
    cmd->add_option("--parameter", f->parameters, "KEY=VALUE default option, e.g. temperature=0.7 or stop='<|im_end|>' (repeatable)")->allow_extra_args(false);
    add_store_flags(*cmd, f->store);
    cmd->callback([f, system, &action] {
        f->system_given = system->count() > 0;
        action = [f] { return create(*f); };
    });
}

}  // namespace rc::cli
