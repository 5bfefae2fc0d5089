#include "models/local_catalog.h"

#include <algorithm>

#include "util/safe_quote.h"
#include "store/model_name.h"

namespace rc::models {

namespace fs = std::filesystem;

namespace {

std::chrono::system_clock::time_point to_system(fs::file_time_type t) {
    return std::chrono::time_point_cast<std::chrono::system_clock::duration>(fs::file_time_type::clock::to_sys(t));
}

model_entry from_record(const store::model_record & r) {
    model_entry e;
    e.name = r.name.display();
    e.parts = r.model_paths;
    if (!e.parts.empty()) e.path = e.parts.front();
    e.size_bytes = r.total_size;
    e.modified = std::chrono::time_point_cast<std::chrono::system_clock::duration>(r.modified);
    e.from_store = true;
    e.status = r.m.status;
    e.status_reason = r.m.status_reason;
    if (const auto * l = r.m.first_model_layer()) e.digest = l->digest.str();
    e.quantization = r.m.quantization;
    e.template_text = r.m.template_text;
    e.system = r.m.system;
    e.parameters = r.m.parameters;
    return e;
}

std::optional<model_entry> loose_file(const fs::path & dir, std::string name) {
    name = store::short_model_name(std::move(name));
    if (!is_valid_model_name(name)) return std::nullopt;
    fs::path p = dir / (name + ".gguf");
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) return std::nullopt;
    model_entry e;
    e.name = name;
    e.path = p;
    e.parts = {p};
    e.size_bytes = fs::file_size(p, ec);
    e.modified = to_system(fs::last_write_time(p, ec));
    return e;
}

}  // namespace

std::vector<std::string> model_entry::part_strings() const {
    std::vector<std::string> out;
    for (const auto & p : parts) out.push_back(p.string());
    if (out.empty() && !path.empty()) out.push_back(path.string());
    return out;
}

bool is_valid_model_name(const std::string & name) {
    if (name.empty() || name.size() > 200 || name[0] == '.' || name[0] == '-') return false;
    for (unsigned char c : name) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
        if (!ok) return false;
    }
    return name.find("..") == std::string::npos;
}

std::vector<model_entry> local_catalog::list() const {
    std::vector<model_entry> out;
    for (const auto & r : store_->list()) out.push_back(from_record(r));
    std::error_code ec;
    for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
        const auto & p = it->path();
        if (p.extension() != ".gguf" || !it->is_regular_file(ec)) continue;
        auto e = loose_file(dir_, p.stem().string());
        if (!e) continue;
        // A store model "demo:latest" hides a loose demo.gguf: requests for "demo" get the store one.
        bool shadowed = std::any_of(out.begin(), out.end(), [&](const model_entry & s) { return s.from_store && store::same_model_name(s.name, e->name); });
        if (!shadowed) out.push_back(std::move(*e));
    }
    std::stable_sort(out.begin(), out.end(), [](const model_entry & a, const model_entry & b) { return a.name < b.name; });
    return out;
}

result<model_entry> local_catalog::find(const std::string & requested) const {
    auto name = store::model_name::parse(requested);
    if (name) {
        if (auto r = store_->find(*name)) return from_record(*r);
    }
    if (auto e = loose_file(dir_, requested)) return *e;
    // The name is client input: echoed bounded and printable (a NUL or a megabyte of it stays out).
    if (!name && !is_valid_model_name(requested)) return name.err();
    return make_error(errc::not_found, "model " + safe_quote(requested, max_echoed_name) + " not found");
}

}  // namespace rc::models
