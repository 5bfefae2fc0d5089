#include "store/manifest.h"

#include <array>
#include <cctype>
#include <limits>
#include <utility>
#include <vector>

#include "store/model_name.h"

namespace rc::store {

namespace {

using json = nlohmann::ordered_json;

constexpr std::array<std::pair<layer_kind, std::string_view>, 3> k_layer_kinds{
    {{layer_kind::model, "model"}, {layer_kind::projector, "projector"}, {layer_kind::adapter, "adapter"}}};
constexpr std::array<std::pair<source_kind, std::string_view>, 4> k_source_kinds{
    {{source_kind::hf, "hf"}, {source_kind::create, "create"}, {source_kind::copy, "copy"}, {source_kind::import, "import"}}};
constexpr std::array<std::pair<model_status, std::string_view>, 3> k_statuses{
    {{model_status::quarantined, "quarantined"}, {model_status::ready, "ready"}, {model_status::failed, "failed"}}};

template <typename E, size_t N>
std::string_view name_of(const std::array<std::pair<E, std::string_view>, N> & table, E v) {
    for (const auto & [e, n] : table) {
        if (e == v) return n;
    }
    return "unknown";
}

template <typename E, size_t N>
std::optional<E> value_of(const std::array<std::pair<E, std::string_view>, N> & table, std::string_view s) {
    for (const auto & [e, n] : table) {
        if (n == s) return e;
    }
    return std::nullopt;
}

// Reads typed fields of one JSON object, keeping the first problem (with the field's path) so the
// parse code reads as a list of fields instead of a ladder of checks.
class fields {
  public:
    fields(const json & obj, std::string where, std::string & problem) : obj_(obj), where_(std::move(where)), problem_(problem) {}

    const json * get(const std::string & key, bool required) {
        auto it = obj_.find(key);
        if (it == obj_.end() || it->is_null()) {
            if (required) fail(key, "is missing");
            return nullptr;
        }
        return &*it;
    }
    std::optional<std::string> string(const std::string & key, bool required = false) {
        const json * v = get(key, required);
        if (!v) return std::nullopt;
        if (!v->is_string()) {
            fail(key, "must be a string");
            return std::nullopt;
        }
        return v->get<std::string>();
    }
    std::optional<uint64_t> unsigned_int(const std::string & key, bool required = false) {
        const json * v = get(key, required);
        if (!v) return std::nullopt;
        // In-memory JSON holds small non-negative ints as signed; parsed text holds them as unsigned.
        if (!v->is_number_integer() || (!v->is_number_unsigned() && v->get<int64_t>() < 0)) {
            fail(key, "must be a non-negative integer");
            return std::nullopt;
        }
        return v->get<uint64_t>();
    }
    std::optional<int64_t> integer(const std::string & key, bool required = false) {
        const json * v = get(key, required);
        if (!v) return std::nullopt;
        const bool too_big = v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max());
        if (!v->is_number_integer() || too_big) {
            fail(key, "must be an integer");
            return std::nullopt;
        }
        return v->get<int64_t>();
    }
    const json * of_type(const std::string & key, json::value_t type, const char * type_name, bool required) {
        const json * v = get(key, required);
        if (v && v->type() != type) {
            fail(key, std::string("must be ") + type_name);
            return nullptr;
        }
        return v;
    }
    template <typename E, size_t N>
    std::optional<E> enumerated(const std::string & key, const std::array<std::pair<E, std::string_view>, N> & table, bool required) {
        auto s = string(key, required);
        if (!s) return std::nullopt;
        auto e = value_of(table, *s);
        if (!e) fail(key, "has unknown value '" + s->substr(0, 40) + "'");
        return e;
    }
    std::optional<sys_time> time(const std::string & key, bool required) {
        auto s = string(key, required);
        if (!s) return std::nullopt;
        auto t = parse_rfc3339(*s);
        if (!t) fail(key, "is not an RFC 3339 UTC time");
        return t;
    }
    void fail(const std::string & key, const std::string & what) {
        if (problem_.empty()) problem_ = where_ + key + " " + what;
    }

  private:
    const json & obj_;
    std::string where_;
    std::string & problem_;
};

// Whether `j` nests deeper than `limit` levels (a scalar is depth 0, [] is 1). Iterative: the
// point is to refuse documents whose recursive dump would exhaust the stack.
bool nests_deeper_than(const json & j, size_t limit) {
    std::vector<std::pair<const json *, size_t>> todo{{&j, 0}};
    while (!todo.empty()) {
        auto [v, depth] = todo.back();
        todo.pop_back();
        if (!v->is_structured()) continue;
        if (depth + 1 > limit) return true;
        for (const auto & child : *v) todo.emplace_back(&child, depth + 1);
    }
    return false;
}

bool is_option_name(const std::string & k) {
    if (k.empty() || k.size() > 64) return false;
    for (unsigned char c : k) {
        if (!std::isalnum(c) && c != '_') return false;
    }
    return true;
}

std::string size_problem(const char * what, size_t n, size_t max) {
    return std::string(what) + " is " + std::to_string(n) + " bytes (at most " + std::to_string(max) + ")";
}

}  // namespace

bool is_plain_filename(std::string_view f) {
    if (f.empty() || f.size() > 255 || f == "." || f == "..") return false;
    for (unsigned char c : f) {
        if (c == '/' || c == '\\' || c < 0x20 || c == 0x7f) return false;
    }
    return true;
}

std::string_view to_string(layer_kind k) { return name_of(k_layer_kinds, k); }
std::string_view to_string(source_kind k) { return name_of(k_source_kinds, k); }
std::string_view to_string(model_status s) { return name_of(k_statuses, s); }
std::optional<model_status> parse_model_status(std::string_view s) { return value_of(k_statuses, s); }

const layer * manifest::first_model_layer() const {
    for (const auto & l : layers) {
        if (l.kind == layer_kind::model) return &l;
    }
    return nullptr;
}

uint64_t manifest::total_size() const {
    uint64_t n = 0;
    for (const auto & l : layers) n += l.size;
    return n;
}

json to_json(const manifest & m) {
    json j;
    j["schema_version"] = manifest::schema_version;
    j["name"] = m.name;
    json layers = json::array();
    for (const auto & l : m.layers) {
        json lj = {{"kind", to_string(l.kind)}, {"digest", l.digest.str()}, {"size", l.size}};
        // Optional when reading, so written only when known: "" would not read back (found by fuzz_manifest).
        if (!l.filename.empty()) lj["filename"] = l.filename;
        layers.push_back(std::move(lj));
    }
    j["layers"] = std::move(layers);
    if (m.template_text) j["template"] = *m.template_text;
    if (m.system) j["system"] = *m.system;
    j["parameters"] = m.parameters.is_object() ? m.parameters : json::object();
    j["quantization"] = m.quantization;
    if (m.file_type) j["file_type"] = *m.file_type;
    j["architecture"] = m.architecture;
    if (m.parameter_count) j["parameter_count"] = *m.parameter_count;
    if (m.context_length) j["context_length"] = *m.context_length;
    j["source"] = {{"kind", to_string(m.source.kind)}, {"repo", m.source.repo}, {"revision", m.source.revision}, {"files", m.source.files}};
    j["status"] = to_string(m.status);
    if (!m.status_reason.empty()) j["status_reason"] = m.status_reason;
    if (m.checked_at) j["checked_at"] = format_rfc3339(*m.checked_at);
    j["created_at"] = format_rfc3339(m.created_at);
    return j;
}

// Invalid UTF-8 (a template or system prompt from some file or client) is replaced rather than
// thrown on: a manifest must always be writable. Compact: indentation grows with nesting depth.
std::string serialize(const manifest & m) { return to_json(m).dump(-1, ' ', false, json::error_handler_t::replace) + "\n"; }

status validate_parameters(const json & params) {
    using L = manifest_limits;
    auto bad = [](const std::string & what) { return make_error(errc::invalid_argument, what); };
    if (!params.is_object()) return bad("parameters must be an object of option names to values");
    if (params.size() > L::max_parameters)
        return bad("parameters has " + std::to_string(params.size()) + " keys (at most " + std::to_string(L::max_parameters) + ")");
    auto scalar_ok = [](const json & v) {
        if (v.is_string()) return v.get_ref<const std::string &>().size() <= L::max_parameter_string_bytes;
        return v.is_number() || v.is_boolean();
    };
    for (auto it = params.begin(); it != params.end(); ++it) {
        if (!is_option_name(it.key())) return bad("parameters has a key that is not an option name (letters, digits and _, at most 64)");
        const json & v = it.value();
        const std::string where = "parameters." + it.key();
        if (v.is_array()) {
            if (v.size() > L::max_parameter_items)
                return bad(where + " has " + std::to_string(v.size()) + " items (at most " + std::to_string(L::max_parameter_items) + ")");
            for (const auto & item : v) {
                if (!scalar_ok(item))
                    return bad(where + " items must be strings (at most " + std::to_string(L::max_parameter_string_bytes) + " bytes), numbers or booleans");
            }
        } else if (!scalar_ok(v)) {
            return bad(where + " must be a string (at most " + std::to_string(L::max_parameter_string_bytes) +
                       " bytes), a number, a boolean or a list of those");
        }
    }
    return {};
}

status check_writable(const manifest & m) {
    using L = manifest_limits;
    auto bad = [&](const std::string & what) { return make_error(errc::invalid_argument, "manifest of '" + m.name + "': " + what); };
    if (m.layers.empty() || m.layers.size() > L::max_layers)
        return bad("must have between 1 and " + std::to_string(L::max_layers) + " layers");
    for (const auto & l : m.layers) {
        if (!l.filename.empty() && !is_plain_filename(l.filename))
            return bad("layer file names must be plain file names (no '/', '\\', '..' or control characters)");
    }
    if (m.template_text && m.template_text->size() > L::max_template_bytes)
        return bad(size_problem("template", m.template_text->size(), L::max_template_bytes));
    if (m.system && m.system->size() > L::max_system_bytes) return bad(size_problem("system", m.system->size(), L::max_system_bytes));
    if (!m.parameters.is_object()) return bad("parameters must be an object");
    // Depth 1 is the object itself; the manifest's own structure adds one level above it.
    if (nests_deeper_than(m.parameters, L::max_read_depth - 1))
        return bad("parameters nest deeper than " + std::to_string(L::max_read_depth - 1) + " levels");
    const std::string text = serialize(m);
    if (text.size() > L::max_bytes) return bad(size_problem("the manifest", text.size(), L::max_bytes));
    if (auto back = parse_manifest(text); !back) return bad("would not read back: " + back.err().message);
    return {};
}

result<manifest> manifest_from_json(const json & j) {
    if (!j.is_object()) return make_error(errc::invalid_argument, "invalid manifest: not a JSON object");
    if (nests_deeper_than(j, manifest_limits::max_read_depth))
        return make_error(errc::invalid_argument, "invalid manifest: nests deeper than " + std::to_string(manifest_limits::max_read_depth) + " levels");
    std::string problem;
    fields f(j, "", problem);
    manifest m;

    auto version = f.unsigned_int("schema_version", true);
    if (version && *version > static_cast<uint64_t>(manifest::schema_version))
        return make_error(errc::invalid_argument, "invalid manifest: schema_version " + std::to_string(*version) +
                                                      " is newer than this build reads (" + std::to_string(manifest::schema_version) + ")");
    if (version && *version == 0) f.fail("schema_version", "must be at least 1");

    if (auto name = f.string("name", true)) {
        if (auto parsed = model_name::parse(*name); !parsed) f.fail("name", "is invalid (" + parsed.err().message + ")");
        else m.name = parsed->full();
    }

    if (const json * layers = f.of_type("layers", json::value_t::array, "an array", true)) {
        for (size_t i = 0; i < layers->size() && problem.empty(); ++i) {
            const json & lj = (*layers)[i];
            std::string where = "layers[" + std::to_string(i) + "].";
            if (!lj.is_object()) {
                problem = where.substr(0, where.size() - 1) + " must be an object";
                break;
            }
            fields lf(lj, where, problem);
            layer l;
            if (auto k = lf.enumerated("kind", k_layer_kinds, true)) l.kind = *k;
            if (auto d = lf.string("digest", true)) {
                if (auto pd = blob_digest::parse(*d)) l.digest = pd.value();
                else lf.fail("digest", "is invalid (" + pd.err().message + ")");
            }
            if (auto s = lf.unsigned_int("size", true)) l.size = *s;
            if (auto fn = lf.string("filename")) {
                if (!is_plain_filename(*fn)) lf.fail("filename", "must be a plain file name");
                else l.filename = *fn;
            }
            m.layers.push_back(std::move(l));
        }
        if (problem.empty() && !m.first_model_layer()) f.fail("layers", "must include a \"model\" layer");
    }

    m.template_text = f.string("template");
    m.system = f.string("system");
    if (const json * p = f.of_type("parameters", json::value_t::object, "an object", false)) m.parameters = *p;
    m.quantization = f.string("quantization").value_or("");
    m.file_type = f.integer("file_type");
    m.architecture = f.string("architecture").value_or("");
    m.parameter_count = f.unsigned_int("parameter_count");
    m.context_length = f.unsigned_int("context_length");

    if (const json * src = f.of_type("source", json::value_t::object, "an object", true)) {
        fields sf(*src, "source.", problem);
        if (auto k = sf.enumerated("kind", k_source_kinds, true)) m.source.kind = *k;
        m.source.repo = sf.string("repo").value_or("");
        m.source.revision = sf.string("revision").value_or("");
        if (const json * files = sf.of_type("files", json::value_t::array, "an array", false)) {
            for (const auto & file : *files) {
                if (!file.is_string()) {
                    sf.fail("files", "must be an array of strings");
                    break;
                }
                m.source.files.push_back(file.get<std::string>());
            }
        }
    }

    if (auto s = f.enumerated("status", k_statuses, true)) m.status = *s;
    m.status_reason = f.string("status_reason").value_or("");
    m.checked_at = f.time("checked_at", false);
    if (auto t = f.time("created_at", true)) m.created_at = *t;

    if (!problem.empty()) return make_error(errc::invalid_argument, "invalid manifest: " + problem);
    return m;
}

result<manifest> parse_manifest(std::string_view text) {
    // No exceptions: a truncated or garbage file is an ordinary error, never a crash.
    json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return make_error(errc::invalid_argument, "invalid manifest: not valid JSON (truncated or corrupt?)");
    return manifest_from_json(j);
}

}  // namespace rc::store
