#include "hub/hub_json.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

#include "hub/gguf_choice.h"
#include "util/ascii.h"
#include "util/quantization.h"

namespace rc::hub {

namespace {

uint64_t number_or_zero(const nlohmann::json & obj, const char * key) {
    auto it = obj.find(key);
    if (it == obj.end() || !it->is_number()) return 0;
    if (it->is_number_unsigned()) return it->get<uint64_t>();
    if (it->is_number_integer()) return (uint64_t) std::max<int64_t>(0, it->get<int64_t>());
    // A float outside uint64's range would be undefined behaviour to convert (found by fuzz_hub_json).
    const double d = it->get<double>();
    if (!(d > 0)) return 0;
    return d >= 18446744073709551616.0 ? UINT64_MAX : static_cast<uint64_t>(d);
}

std::string string_or_empty(const nlohmann::json & obj, const char * key) {
    auto it = obj.find(key);
    return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool is_sha256_hex(const std::string & s) {
    return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace

result<std::vector<repo_file>> parse_tree(const nlohmann::json & j) {
    if (!j.is_array()) return make_error(errc::unavailable, "unexpected tree listing from the Hub (not an array)");
    std::vector<repo_file> files;
    for (const auto & e : j) {
        if (!e.is_object() || string_or_empty(e, "type") != "file") continue;  // directories and future kinds
        repo_file f;
        f.path = string_or_empty(e, "path");
        if (f.path.empty()) return make_error(errc::unavailable, "unexpected tree listing from the Hub (file without a path)");
        f.size = number_or_zero(e, "size");
        if (auto lfs = e.find("lfs"); lfs != e.end() && lfs->is_object()) {
            // The LFS oid is the sha256 of the content; the top-level oid is git's blob hash of the pointer.
            std::string oid = ascii_lower(string_or_empty(*lfs, "oid"));
            if (oid.starts_with("sha256:")) oid = oid.substr(7);
            if (is_sha256_hex(oid)) f.sha256 = oid;
            if (lfs->contains("size")) f.size = number_or_zero(*lfs, "size");
        }
        files.push_back(std::move(f));
    }
    return files;
}

std::vector<std::string> quants_of(const std::vector<std::string> & file_names) {
    const auto & order = quant::preference_order();
    std::vector<size_t> ranks;
    for (const auto & name : file_names) {
        if (!is_gguf_file(name) || is_projector_file(name)) continue;
        auto q = quant::name_from_filename(name);
        if (!q) continue;
        size_t rank = size_t(std::find(order.begin(), order.end(), *q) - order.begin());
        if (std::find(ranks.begin(), ranks.end(), rank) == ranks.end()) ranks.push_back(rank);
    }
    std::sort(ranks.begin(), ranks.end());
    std::vector<std::string> out;
    for (size_t r : ranks) out.push_back(order[r]);
    return out;
}

result<std::vector<search_hit>> parse_search(const nlohmann::json & j) {
    if (!j.is_array()) return make_error(errc::unavailable, "unexpected search answer from the Hub (not an array)");
    std::vector<search_hit> hits;
    for (const auto & e : j) {
        if (!e.is_object()) continue;
        search_hit h;
        h.id = string_or_empty(e, "id");
        if (h.id.empty()) h.id = string_or_empty(e, "modelId");
        if (h.id.empty()) continue;
        h.downloads = number_or_zero(e, "downloads");
        h.likes = number_or_zero(e, "likes");
        std::vector<std::string> names;
        if (auto sib = e.find("siblings"); sib != e.end() && sib->is_array())
            for (const auto & s : *sib)
                if (s.is_object()) names.push_back(string_or_empty(s, "rfilename"));
        h.quants = quants_of(names);
        hits.push_back(std::move(h));
    }
    return hits;
}

}  // namespace rc::hub
