#include "models/curated_catalog.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "hub/gguf_choice.h"
#include "hub/hub_urls.h"
#include "util/quantization.h"

namespace rc::models {

namespace {

using json = nlohmann::json;

bool known_use(std::string_view use) {
    return std::find(std::begin(curated_uses), std::end(curated_uses), use) != std::end(curated_uses);
}

bool valid_name(std::string_view name) {
    if (name.empty() || name.size() > 64) return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    });
}

// An optional string field: absent is "", any other type is an error.
result<std::string> optional_string(const json & entry, const char * field, const std::string & where) {
    if (!entry.contains(field)) return std::string();
    if (!entry[field].is_string()) return make_error(errc::invalid_argument, where + ": \"" + field + "\" must be a string");
    return entry[field].get<std::string>();
}

result<curated_model> parse_model(const json & entry, size_t index) {
    const std::string where = "curated catalog: models[" + std::to_string(index) + "]";
    if (!entry.is_object()) return make_error(errc::invalid_argument, where + " is not an object");
    curated_model m;
    for (auto [field, out] : {std::pair{"name", &m.name}, std::pair{"repo", &m.repo}, std::pair{"quantization", &m.quantization},
                              std::pair{"file", &m.file}, std::pair{"parameters", &m.parameters}, std::pair{"license", &m.license},
                              std::pair{"description", &m.description}}) {
        auto v = optional_string(entry, field, where);
        if (!v) return v.err();
        *out = std::move(v.value());
    }
    if (!valid_name(m.name)) return make_error(errc::invalid_argument, where + ": \"name\" must be 1-64 of [a-z0-9._-], got '" + m.name + "'");
    const std::string named = "curated catalog: model '" + m.name + "'";
    if (auto ok = hub::check_repo_id(m.repo); !ok) return make_error(errc::invalid_argument, named + ": " + ok.err().message);
    auto quant = quant::canonical(m.quantization);
    if (!quant) return make_error(errc::invalid_argument, named + ": unknown quantization '" + m.quantization + "'");
    m.quantization = *quant;
    if (!m.file.empty() && !hub::is_gguf_file(m.file)) return make_error(errc::invalid_argument, named + ": \"file\" must name a .gguf file");
    if (!entry.contains("uses") || !entry["uses"].is_array() || entry["uses"].empty())
        return make_error(errc::invalid_argument, named + ": \"uses\" must be a non-empty list");
    for (const auto & u : entry["uses"]) {
        if (!u.is_string() || !known_use(u.get<std::string>()))
            return make_error(errc::invalid_argument, named + ": unknown use " + u.dump() + " (chat, code, embedding, triage)");
        m.uses.push_back(u.get<std::string>());
    }
    return m;
}

}  // namespace

bool curated_model::serves(std::string_view use) const { return std::find(uses.begin(), uses.end(), use) != uses.end(); }

const curated_model * curated_catalog::find(std::string_view name) const {
    for (const auto & m : models)
        if (m.name == name) return &m;
    return nullptr;
}

result<curated_catalog> parse_curated_catalog(std::string_view json_text) {
    json doc = json::parse(json_text.begin(), json_text.end(), nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded() || !doc.is_object()) return make_error(errc::invalid_argument, "curated catalog: not a JSON object");
    curated_catalog cat;
    if (!doc.contains("schema") || !doc["schema"].is_number_integer() || doc["schema"].get<int>() != 1)
        return make_error(errc::invalid_argument, "curated catalog: \"schema\" must be 1");
    if (!doc.contains("models") || !doc["models"].is_array() || doc["models"].empty())
        return make_error(errc::invalid_argument, "curated catalog: \"models\" must be a non-empty list");
    std::set<std::string> names;
    for (size_t i = 0; i < doc["models"].size(); ++i) {
        auto m = parse_model(doc["models"][i], i);
        if (!m) return m.err();
        if (!names.insert(m->name).second) return make_error(errc::invalid_argument, "curated catalog: model '" + m->name + "' appears twice");
        cat.models.push_back(std::move(m.value()));
    }
    return cat;
}

result<curated_catalog> load_curated_catalog(const std::filesystem::path & path) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) return make_error(errc::not_found, "curated catalog " + path.string() + " does not exist");
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in.good() && !in.eof()) return make_error(errc::io, "cannot read curated catalog " + path.string());
    auto cat = parse_curated_catalog(text.str());
    if (!cat) return make_error(cat.err().code, cat.err().message + " (" + path.string() + ")");
    return cat;
}

uint64_t curated_memory_need(uint64_t gguf_bytes) { return gguf_bytes + gguf_bytes / 4; }

sized_model size_curated(const hub::hub_client & hub, const curated_model & m) {
    sized_model s;
    s.model = &m;
    auto files = hub.list_files(m.repo);
    if (!files) {
        s.problem = files.err().message;
        return s;
    }
    auto choice = hub::choose_gguf(*files, m.quantization);
    if (!choice) {
        s.problem = choice.err().message;
        return s;
    }
    s.file = choice->parts.front().path;
    s.size = choice->total_size;
    s.need = curated_memory_need(s.size);
    if (!m.file.empty() && m.file != s.file)
        s.problem = "the Hub resolves " + m.quantization + " to " + s.file + ", the catalog expects " + m.file;
    return s;
}

fit_choice choose_fit(const std::vector<sized_model> & sized, uint64_t memory, const std::vector<std::string> & uses) {
    fit_choice out;
    std::vector<std::string> wanted = uses;
    if (wanted.empty()) wanted.assign(std::begin(curated_uses), std::end(curated_uses));
    for (const auto & use : wanted) {
        const sized_model * pick = nullptr;
        for (const auto & s : sized) {
            // A catalog that disagrees with the Hub (s.problem with a size) is still usable: the pull
            // verifies whatever the Hub serves. Only an entry that could not be sized is skipped.
            if (s.size == 0 || !s.model->serves(use) || s.need > memory) continue;
            pick = &s;
            break;
        }
        if (!pick) {
            out.unmet.push_back(use);
            continue;
        }
        if (std::find(out.picks.begin(), out.picks.end(), pick) == out.picks.end()) out.picks.push_back(pick);
    }
    // Catalog order, whatever order the uses were asked in.
    std::sort(out.picks.begin(), out.picks.end());
    return out;
}

}  // namespace rc::models
