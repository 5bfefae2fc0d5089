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
#include "llama/gguf_metadata.h"
#include "modelfile.h"
#include "models/local_catalog.h"
#include "models/model_puller.h"
#include "util/byte_size.h"

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
    std::vector<fs::path> files_to_import;     // GGUF parts, in order
    std::optional<store::manifest> base;        // --from a store model: its layers and settings
    std::optional<std::string> template_text;
    std::optional<std::string> system;
    ojson parameters = ojson::object();         // merged over the base's
};

result<std::string> read_text_file(const fs::path & p, const std::string & what) {
    std::ifstream in(p, std::ios::binary);
    if (!in) return make_error(errc::not_found, "cannot read " + what + " " + p.string());
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// --from / FROM naming a model: a store model's manifest, a loose file's parts, or a GGUF path.
status plan_from_model(const models::local_catalog & catalog, const std::string & from, create_plan & plan) {
    if (auto e = catalog.find(from)) {
        if (e->from_store) {
            auto rec = catalog.store().find(from);
            if (!rec) return rec.err();
            plan.base = rec->m;
        } else {
            plan.files_to_import = e->parts;
        }
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

    // Settings: the base model's, then the Modelfile's, then the flags'.
    if (plan.base) {
        plan.template_text = plan.base->template_text;
        plan.system = plan.base->system;
        plan.parameters = plan.base->parameters;
    }
    if (mf) {
        if (mf->template_text) plan.template_text = mf->template_text;
        if (mf->system) plan.system = mf->system;
        for (auto it = mf->parameters.begin(); it != mf->parameters.end(); ++it) plan.parameters[it.key()] = it.value();
    }
    if (!f.template_file.empty()) {
        auto t = read_text_file(f.template_file, "template file");
        if (!t) return t.err();
        plan.template_text = t.value();
    }
    if (f.system_given) plan.system = f.system;
    ojson flag_params = ojson::object();
    for (const auto & kv : f.parameters) {
        const auto eq = kv.find('=');
        if (eq == std::string::npos) return make_error(errc::invalid_argument, "--parameter '" + kv + "' is not KEY=VALUE");
        if (auto s = add_parameter(flag_params, kv.substr(0, eq), kv.substr(eq + 1)); !s) return s.err();
    }
    for (auto it = flag_params.begin(); it != flag_params.end(); ++it) plan.parameters[it.key()] = it.value();
    return plan;
}

// The settings against the store's limits, before anything is imported or written.
status check_settings(const create_plan & plan) {
    using L = store::manifest_limits;
    if (plan.template_text && plan.template_text->size() > L::max_template_bytes)
        return make_error(errc::invalid_argument, "the template is " + std::to_string(plan.template_text->size()) + " bytes (at most " +
                                                      std::to_string(L::max_template_bytes) + ")");
    if (plan.system && plan.system->size() > L::max_system_bytes)
        return make_error(errc::invalid_argument, "the system prompt is " + std::to_string(plan.system->size()) + " bytes (at most " +
                                                      std::to_string(L::max_system_bytes) + ")");
    return store::validate_parameters(plan.parameters);
}

// Checks each file is a GGUF (before copying gigabytes), then copies it into the blob store.
result<store::manifest> import_files(store::model_store & st, const std::vector<fs::path> & files) {
    store::manifest m;
    for (size_t i = 0; i < files.size(); ++i) {
        auto md = llama::read_gguf_metadata(files[i].string(), 0);
        if (!md) return make_error(md.err().code, files[i].string() + ": " + md.err().message);
        if (i == 0) {
            if (auto s = store::fill_from_gguf(m, files[i]); !s) return s.err();
        }
    }
    for (const auto & p : files) {
        std::error_code ec;
        const auto size = fs::file_size(p, ec);
        std::cerr << "importing " << p.string() << " (" << format_byte_size(size) << ")\n";
        auto digest = st.blobs().import_file(p);
        if (!digest) return digest.err();
        auto stored = st.blobs().size(*digest);
        if (!stored) return stored.err();
        m.layers.push_back({store::layer_kind::model, *digest, *stored, p.filename().string()});
        m.source.files.push_back(fs::absolute(p, ec).string());
    }
    return m;
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
    if (auto s = check_settings(*plan); !s) return fail(s.err());

    store::manifest m;
    if (plan->base) {
        m = *plan->base;
        m.source = store::model_source{store::source_kind::create, plan->base->name, "", {}};
        m.created_at = {};
        m.checked_at.reset();
        m.status_reason.clear();
    } else {
        auto imported = import_files(st, plan->files_to_import);
        if (!imported) return fail(imported.err());
        m = std::move(imported.value());
        m.source.kind = store::source_kind::create;
    }
    m.template_text = plan->template_text;
    m.system = plan->system;
    m.parameters = plan->parameters;
    // The new model is checked beside the old one; only a model that passes replaces it.
    std::cerr << "checking model\n";
    if (auto v = models::commit_checked_model(st, *name, m); !v) {
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
