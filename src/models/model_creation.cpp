#include "models/model_creation.h"

#include "llama/gguf_metadata.h"
#include "models/model_puller.h"
#include "util/byte_size.h"

namespace rc::models {

namespace fs = std::filesystem;

namespace {

void say(const creation_progress & progress, const std::string & step) {
    if (progress) progress(step);
}

}  // namespace

result<store::manifest> base_from_files(store::model_store & st, const std::vector<fs::path> & files, const creation_progress & progress) {
    if (files.empty()) return make_error(errc::invalid_argument, "no GGUF file to create the model from");
    for (const auto & f : files) {  // every part, before copying gigabytes
        if (auto md = llama::read_gguf_metadata(f.string(), 0); !md) return make_error(errc::invalid_argument, f.string() + ": " + md.err().message);
    }
    store::manifest m;
    for (const auto & p : files) {
        std::error_code ec;
        say(progress, "importing " + p.string() + " (" + format_byte_size(fs::file_size(p, ec)) + ")");
        auto digest = st.blobs().import_file(p);
        if (!digest) return digest.err();
        auto stored = st.blobs().size(*digest);
        if (!stored) return stored.err();
        m.layers.push_back({store::layer_kind::model, *digest, *stored, p.filename().string()});
        m.source.files.push_back(fs::absolute(p, ec).string());
    }
    return m;
}

result<store::manifest> base_from_model(const local_catalog & catalog, const std::string & from, const creation_progress & progress) {
    auto e = catalog.find(from);
    if (!e) {
        if (e.err().code == errc::not_found) return make_error(errc::not_found, "model '" + from + "' not found in " + catalog.dir().string());
        return e.err();
    }
    if (!e->from_store) return base_from_files(catalog.store(), e->parts, progress);  // a loose file: copied into the store
    auto rec = catalog.store().find(from);
    if (!rec) return rec.err();
    store::manifest m = rec->m;
    m.source = store::model_source{store::source_kind::create, rec->name.full(), "", {}};
    return m;
}

status check_settings(const store::manifest & settings) {
    using L = store::manifest_limits;
    if (settings.template_text && settings.template_text->size() > L::max_template_bytes)
        return make_error(errc::invalid_argument, "the template is " + std::to_string(settings.template_text->size()) + " bytes (at most " +
                                                      std::to_string(L::max_template_bytes) + ")");
    if (settings.system && settings.system->size() > L::max_system_bytes)
        return make_error(errc::invalid_argument, "the system prompt is " + std::to_string(settings.system->size()) + " bytes (at most " +
                                                      std::to_string(L::max_system_bytes) + ")");
    return store::validate_parameters(settings.parameters);
}

status prepare_new_model(const store::model_name & name, store::manifest & m) {
    if (!m.first_model_layer()) return make_error(errc::invalid_argument, "no model GGUF among the files");
    m.name = name.full();
    m.source.kind = store::source_kind::create;
    m.created_at = {};
    m.checked_at.reset();
    m.status_reason.clear();
    if (auto s = check_settings(m); !s) return s;
    return store::check_writable(m);
}

status create_model(store::model_store & st, const store::model_name & name, store::manifest m, const creation_progress & progress) {
    if (auto s = prepare_new_model(name, m); !s) return s;
    say(progress, "parsing GGUF");
    if (auto s = store::fill_from_gguf(m, st.blobs().path(m.first_model_layer()->digest)); !s)
        return make_error(errc::invalid_argument, "the model file is not a readable GGUF: " + s.err().message);
    say(progress, "checking model");
    if (auto v = commit_checked_model(st, name, std::move(m)); !v) return v.err();
    return {};
}

}  // namespace rc::models
