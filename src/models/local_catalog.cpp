#include "models/local_catalog.h"

#include <algorithm>

namespace rc::models {

namespace fs = std::filesystem;

namespace {
std::chrono::system_clock::time_point to_system(fs::file_time_type t) {
    return std::chrono::time_point_cast<std::chrono::system_clock::duration>(fs::file_time_type::clock::to_sys(t));
}
}  // namespace

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
    std::error_code ec;
    for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
        const auto & p = it->path();
        if (p.extension() != ".gguf" || !it->is_regular_file(ec)) continue;
        std::string name = p.stem().string();
        if (!is_valid_model_name(name)) continue;
        model_entry e{name, p, it->file_size(ec), to_system(it->last_write_time(ec))};
        out.push_back(std::move(e));
    }
    std::sort(out.begin(), out.end(), [](const model_entry & a, const model_entry & b) { return a.name < b.name; });
    return out;
}

result<model_entry> local_catalog::find(const std::string & requested) const {
    std::string name = requested;
    if (name.size() > 7 && name.ends_with(":latest")) name.resize(name.size() - 7);
    if (name.size() > 5 && name.ends_with(".gguf")) name.resize(name.size() - 5);
    if (!is_valid_model_name(name)) return make_error(errc::invalid_argument, "invalid model name '" + requested + "'");
    fs::path p = dir_ / (name + ".gguf");
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) return make_error(errc::not_found, "model '" + requested + "' not found");
    return model_entry{name, p, fs::file_size(p, ec), to_system(fs::last_write_time(p, ec))};
}

}  // namespace rc::models
