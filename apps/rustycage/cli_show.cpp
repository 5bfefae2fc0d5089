// `rustycage show NAME`: what a model is (GGUF facts), where it came from, its check status and
// incidents, how it runs (template, system prompt, parameters). --modelfile prints an Ollama-style
// Modelfile that `rustycage create -f` reads back; --json everything as one object.
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "commands.h"
#include "model_view.h"
#include "store/incident_log.h"
#include "util/byte_size.h"

namespace rc::cli {

namespace {

using ojson = nlohmann::ordered_json;

constexpr size_t k_template_preview_lines = 8;
constexpr size_t k_incidents_shown = 10;

struct show_flags {
    store_flags store;
    std::string name;
    bool modelfile = false;
    bool json = false;
};

// Everything show prints, gathered once from the catalog entry, its manifest and its GGUF header.
struct model_details {
    models::model_entry entry;
    std::optional<store::manifest> manifest;  // store models
    std::optional<llama::gguf_metadata> metadata;
    std::string architecture;
    std::optional<uint64_t> parameter_count;
    std::optional<uint64_t> context_length;
    std::string quantization;
    std::string template_text;  // the override, else the GGUF's own
    bool template_overridden = false;
    std::vector<store::incident> incidents;
};

result<model_details> gather(const show_flags & f) {
    models::local_catalog catalog(f.store.models_dir);
    auto e = catalog.find(f.name);
    if (!e) return e.err();
    model_details d;
    d.entry = e.value();
    if (d.entry.from_store) {
        if (auto rec = catalog.store().find(f.name)) d.manifest = rec->m;
    }
    if (auto md = llama::read_gguf_metadata(d.entry.path.string(), 0)) d.metadata = std::move(md.value());
    if (d.manifest) {
        d.architecture = d.manifest->architecture;
        d.parameter_count = d.manifest->parameter_count;
        d.context_length = d.manifest->context_length;
    }
    if (d.metadata) {
        if (d.architecture.empty()) d.architecture = d.metadata->get_string("general.architecture");
        if (!d.parameter_count) d.parameter_count = d.metadata->n_params;
        if (!d.context_length && !d.architecture.empty()) d.context_length = d.metadata->get_uint(d.architecture + ".context_length");
    }
    d.quantization = quantization_of(d.entry, d.metadata ? &*d.metadata : nullptr);
    d.template_overridden = d.entry.template_text.has_value();
    if (d.template_overridden) d.template_text = *d.entry.template_text;
    else if (d.metadata) d.template_text = d.metadata->get_string("tokenizer.chat_template");
    d.incidents = store::incident_log::in_store(f.store.models_dir).list(k_incidents_shown, d.entry.name);
    return d;
}

std::string source_text(const model_details & d) {
    if (!d.manifest) return "file " + d.entry.path.string();
    const auto & s = d.manifest->source;
    std::string files;
    for (const auto & file : s.files) files += (files.empty() ? "" : ", ") + file;
    switch (s.kind) {
        case store::source_kind::hf:
            return "hf.co/" + s.repo + (s.revision.empty() ? "" : " @ " + s.revision) + (files.empty() ? "" : ": " + files);
        case store::source_kind::copy: return "copied from " + s.repo;
        case store::source_kind::create: return "created from " + (s.repo.empty() ? files : s.repo);
        case store::source_kind::import: return "imported" + (files.empty() ? "" : " from " + files);
    }
    return "";
}

std::vector<std::string> lines_of(const std::string & text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

// PARAMETER values as a Modelfile spells them: strings quoted (JSON escapes), numbers and booleans bare.
std::string parameter_value(const ojson & v) { return v.dump(); }

void for_each_parameter(const ojson & params, const std::function<void(const std::string &, const ojson &)> & fn) {
    for (auto it = params.begin(); it != params.end(); ++it) {
        if (it.value().is_array()) {
            for (const auto & v : it.value()) fn(it.key(), v);
        } else {
            fn(it.key(), it.value());
        }
    }
}

void print_text(const model_details & d) {
    const auto & e = d.entry;
    text_table facts;
    facts.add({"name", e.name});
    facts.add({"id", short_id(digest_hex(e))});
    if (!d.architecture.empty()) facts.add({"architecture", d.architecture});
    if (d.parameter_count) facts.add({"parameters", format_parameter_count(*d.parameter_count)});
    if (d.context_length) facts.add({"context length", std::to_string(*d.context_length)});
    facts.add({"quantization", d.quantization});
    facts.add({"size", format_byte_size(e.size_bytes)});
    facts.add({"status", std::string(store::to_string(e.status))});
    if (!e.status_reason.empty()) facts.add({"reason", e.status_reason});
    facts.add({"source", source_text(d)});
    facts.add({"modified", relative_time(e.modified)});

    auto section = [](const std::string & title, const std::string & body) { std::cout << "  " << title << "\n" << body << "\n"; };
    auto indented = [](const text_table & t) {
        std::ostringstream s;
        t.print(s);
        std::string out;
        for (const auto & line : lines_of(s.str())) out += "    " + line + "\n";
        return out;
    };
    section("Model", indented(facts));
    if (!d.template_text.empty()) {
        auto lines = lines_of(d.template_text);
        std::string body;
        for (size_t i = 0; i < lines.size() && i < k_template_preview_lines; ++i) body += "    " + lines[i] + "\n";
        if (lines.size() > k_template_preview_lines)
            body += "    (" + std::to_string(lines.size() - k_template_preview_lines) + " more lines: --modelfile or --json prints them all)\n";
        section(d.template_overridden ? "Template (set on this model)" : "Template (from the GGUF file)", body);
    }
    if (e.system) {
        std::string body;
        for (const auto & line : lines_of(*e.system)) body += "    " + line + "\n";
        section("System", body);
    }
    if (!e.parameters.empty()) {
        text_table params;
        for_each_parameter(e.parameters, [&params](const std::string & k, const ojson & v) { params.add({k, parameter_value(v)}); });
        section("Parameters", indented(params));
    }
    if (!d.incidents.empty()) {
        text_table incidents;
        for (const auto & i : d.incidents) incidents.add({store::format_rfc3339(i.time), i.kind, i.reason});
        section("Incidents", indented(incidents));
    }
}

void print_modelfile(const model_details & d) {
    const auto & e = d.entry;
    std::cout << "# Modelfile generated by \"rustycage show\"\n"
              << "# To build a new Modelfile based on this, replace FROM with:\n"
              << "# FROM " << e.name << "\n\n";
    // Absolute, so the Modelfile works from any directory.
    std::error_code ec;
    for (const auto & p : e.part_strings()) std::cout << "FROM " << std::filesystem::absolute(p, ec).string() << "\n";
    if (!d.template_text.empty()) std::cout << "TEMPLATE \"\"\"" << d.template_text << "\"\"\"\n";
    if (e.system) std::cout << "SYSTEM \"\"\"" << *e.system << "\"\"\"\n";
    for_each_parameter(e.parameters, [](const std::string & k, const ojson & v) { std::cout << "PARAMETER " << k << " " << parameter_value(v) << "\n"; });
}

void print_json(const model_details & d) {
    const auto & e = d.entry;
    const std::string hex = digest_hex(e);
    ojson out = {{"name", e.name},
                 {"id", short_id(hex)},
                 {"digest", e.from_store ? "sha256:" + hex : std::string()},
                 {"origin", origin_of(e)},
                 {"path", e.path.string()},
                 {"parts", e.part_strings()},
                 {"architecture", d.architecture},
                 {"parameter_count", d.parameter_count ? ojson(*d.parameter_count) : ojson(nullptr)},
                 {"context_length", d.context_length ? ojson(*d.context_length) : ojson(nullptr)},
                 {"quantization", d.quantization},
                 {"size", e.size_bytes},
                 {"status", std::string(store::to_string(e.status))},
                 {"status_reason", e.status_reason},
                 {"modified_at", iso_time(e.modified)}};
    if (d.manifest) {
        const auto & s = d.manifest->source;
        out["source"] = {{"kind", std::string(store::to_string(s.kind))}, {"repo", s.repo}, {"revision", s.revision}, {"files", s.files}};
        out["checked_at"] = d.manifest->checked_at ? ojson(iso_time(*d.manifest->checked_at)) : ojson(nullptr);
    } else {
        out["source"] = {{"kind", "file"}, {"repo", ""}, {"revision", ""}, {"files", {e.path.string()}}};
    }
    out["template"] = d.template_text;
    out["template_overridden"] = d.template_overridden;
    out["system"] = e.system ? ojson(*e.system) : ojson(nullptr);
    out["parameters"] = e.parameters;
    auto incidents = ojson::array();
    for (const auto & i : d.incidents)
        incidents.push_back({{"id", i.id}, {"time", store::format_rfc3339(i.time)}, {"kind", i.kind}, {"reason", i.reason}, {"details", i.details}});
    out["incidents"] = incidents;
    std::cout << out.dump(2) << "\n";
}

int show(const show_flags & f) {
    if (!apply_log_level(f.store.log_level)) return 2;
    auto d = gather(f);
    if (!d) return fail(d.err().message + " (in " + f.store.models_dir + ")");
    if (f.json) print_json(*d);
    else if (f.modelfile) print_modelfile(*d);
    else print_text(*d);
    return 0;
}

}  // namespace

void register_show(CLI::App & app, std::function<int()> & action) {
    auto f = std::make_shared<show_flags>();
    auto * cmd = app.add_subcommand("show", "Show a model's details, status, template, parameters and incidents");
    cmd->add_option("name", f->name, "Model name")->required();
    auto * mf = cmd->add_flag("--modelfile", f->modelfile, "Print an Ollama-style Modelfile");
    cmd->add_flag("--json", f->json, "Print JSON")->excludes(mf);
    add_store_flags(*cmd, f->store);
    cmd->callback([f, &action] { action = [f] { return show(*f); }; });
}

}  // namespace rc::cli
