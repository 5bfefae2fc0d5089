#include "hub/gguf_choice.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "util/ascii.h"
#include "util/quantization.h"

namespace rc::hub {

namespace {

std::string_view base_name(std::string_view path) {
    size_t slash = path.find_last_of('/');
    return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string pad5(size_t n) {
    std::string s = std::to_string(n);
    return std::string(s.size() < 5 ? 5 - s.size() : 0, '0') + s;
}

bool all_digits(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// One model: a single file, or the parts of a split model (indexed by part number - 1).
struct model_group {
    std::string key;
    std::string quant;
    int count = 1;
    std::vector<const repo_file *> parts;
    bool projector = false;

    bool complete() const {
        return std::all_of(parts.begin(), parts.end(), [](const repo_file * f) { return f != nullptr; });
    }
    uint64_t size() const {
        uint64_t s = 0;
        for (const auto * f : parts) s += f ? f->size : 0;
        return s;
    }
    std::string display() const { return count > 1 ? key + " (" + std::to_string(count) + " parts)" : key; }
};

std::vector<model_group> group_models(const std::vector<repo_file> & files) {
    std::map<std::string, model_group> by_key;  // sorted by path: a stable, predictable pick order
    for (const auto & f : files) {
        if (!is_gguf_file(f.path)) continue;
        auto split = parse_split_name(f.path);
        std::string key = split ? split->stem + "-of-" + std::to_string(split->count) : f.path;
        auto & g = by_key[key];
        if (g.parts.empty()) {
            g.key = split ? split->stem : f.path;
            g.count = split ? split->count : 1;
            g.parts.assign(size_t(g.count), nullptr);
            g.quant = quant::name_from_filename(f.path).value_or("");
            g.projector = is_projector_file(f.path);
        }
        g.parts[split ? size_t(split->part - 1) : 0] = &f;
    }
    std::vector<model_group> out;
    for (auto & [k, g] : by_key) out.push_back(std::move(g));
    return out;
}

result<gguf_choice> take(const model_group & g) {
    if (!g.complete()) {
        std::string missing;
        for (size_t i = 0; i < g.parts.size(); ++i) {
            if (g.parts[i]) continue;
            missing += (missing.empty() ? "" : ", ") + g.key + "-" + pad5(i + 1) + "-of-" + pad5(size_t(g.count)) + ".gguf";
        }
        return make_error(errc::not_found, "split model " + g.display() + " is incomplete in the repository; missing " + missing);
    }
    gguf_choice c;
    c.quant = g.quant;
    for (const auto * f : g.parts) c.parts.push_back(*f);
    c.total_size = g.size();
    return c;
}

// What a pull could ask for, for error messages: quantizations best-first, then unnamed models.
std::string available(const std::vector<model_group> & groups) {
    std::vector<std::string> names;
    for (const auto & q : quant::preference_order())
        for (const auto & g : groups)
            if (!g.projector && g.quant == q) {
                names.push_back(q);
                break;
            }
    for (const auto & g : groups)
        if (!g.projector && g.quant.empty()) names.push_back(g.display());
    std::string out;
    for (const auto & n : names) out += (out.empty() ? "" : ", ") + n;
    return out.empty() ? "none" : out;
}

// The first complete model among those matching; the first incomplete one's error if all are incomplete.
template <typename Pred>
std::optional<result<gguf_choice>> first_matching(const std::vector<model_group> & groups, Pred pred) {
    std::optional<result<gguf_choice>> incomplete;
    for (const auto & g : groups) {
        if (!pred(g)) continue;
        auto c = take(g);
        if (c.ok()) return c;
        if (!incomplete) incomplete = std::move(c);
    }
    return incomplete;
}

}  // namespace

bool is_gguf_file(std::string_view path) { return path.size() > 5 && ascii_lower(path.substr(path.size() - 5)) == ".gguf"; }

bool is_projector_file(std::string_view path) { return ascii_lower(base_name(path)).find("mmproj") != std::string::npos; }

std::optional<split_name> parse_split_name(std::string_view path) {
    // "<stem>-00001-of-00003.gguf": the suffix after the stem is exactly 20 characters.
    constexpr size_t suffix = 20;
    if (!is_gguf_file(path) || path.size() <= suffix) return std::nullopt;
    std::string_view tail = path.substr(path.size() - suffix, suffix - 5);  // "-00001-of-00003"
    if (tail[0] != '-' || tail.substr(6, 4) != "-of-") return std::nullopt;
    std::string_view part = tail.substr(1, 5), count = tail.substr(10, 5);
    if (!all_digits(part) || !all_digits(count)) return std::nullopt;
    split_name s{std::string(path.substr(0, path.size() - suffix)), std::stoi(std::string(part)), std::stoi(std::string(count))};
    if (s.count < 1 || s.part < 1 || s.part > s.count) return std::nullopt;
    return s;
}

result<gguf_choice> choose_gguf(const std::vector<repo_file> & files, std::string_view wanted_in) {
    const auto groups = group_models(files);
    const bool any_model = std::any_of(groups.begin(), groups.end(), [](const model_group & g) { return !g.projector; });

    std::string wanted(wanted_in);
    while (!wanted.empty() && wanted.back() == ' ') wanted.pop_back();
    while (!wanted.empty() && wanted.front() == ' ') wanted.erase(0, 1);

    // An exact file name or path (projectors allowed: asking by name is asking for it).
    if (!wanted.empty()) {
        for (const auto & g : groups)
            for (const auto * f : g.parts)
                if (f && (f->path == wanted || base_name(f->path) == wanted)) return take(g);
    }
    if (!any_model) return make_error(errc::not_found, "the repository has no GGUF model files");

    if (wanted.empty() || ascii_lower(wanted) == "latest") {
        for (const auto & q : quant::preference_order())
            if (auto c = first_matching(groups, [&](const model_group & g) { return !g.projector && g.quant == q; })) return std::move(*c);
        // No known quantization in any name: the smallest model is the safest guess for memory.
        const model_group * smallest = nullptr;
        for (const auto & g : groups)
            if (!g.projector && (!smallest || g.size() < smallest->size())) smallest = &g;
        return take(*smallest);
    }

    if (auto q = quant::canonical(wanted)) {
        if (auto c = first_matching(groups, [&](const model_group & g) { return !g.projector && g.quant == *q; })) return std::move(*c);
        return make_error(errc::not_found, "the repository has no " + *q + " model; available: " + available(groups));
    }
    if (is_gguf_file(wanted)) return make_error(errc::not_found, "the repository has no file '" + wanted + "'; available: " + available(groups));
    return make_error(errc::invalid_argument, "'" + wanted + "' is neither a known quantization nor a file of the repository; available: " + available(groups));
}

}  // namespace rc::hub
