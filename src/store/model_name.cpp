#include "store/model_name.h"

#include <array>
#include <cctype>
#include <utility>
#include <vector>

#include "util/ascii.h"
#include "util/quantization.h"
#include "util/safe_quote.h"

namespace rc::store {

namespace {

error invalid(std::string_view text, const std::string & problem) {
    return make_error(errc::invalid_argument, "invalid model name " + safe_quote(text) + ": " + problem);
}

bool is_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

// Empty when the component is valid, else the problem.
std::string check_component(std::string_view what, std::string_view c) {
    if (c.empty()) return std::string(what) + " is empty";
    if (c.size() > model_name::max_component)
        return std::string(what) + " is longer than " + std::to_string(model_name::max_component) + " characters";
    if (!is_alnum(c[0])) return std::string(what) + " must start with a letter or digit";
    for (char ch : c) {
        if (!is_alnum(ch) && ch != '.' && ch != '_' && ch != '-')
            return std::string(what) + " may contain only letters, digits, '.', '_' and '-'";
    }
    return {};
}

bool starts_with_nocase(std::string_view s, std::string_view prefix) {
    return s.size() >= prefix.size() && ascii_lower(s.substr(0, prefix.size())) == prefix;
}

}  // namespace

result<model_name> model_name::parse(std::string_view text) {
    if (text.empty()) return invalid(text, "it is empty");
    if (text.size() > max_length) return invalid(text, "it is longer than " + std::to_string(max_length) + " characters");
    // Byte-level refusals first, so the message names the actual problem rather than a symptom.
    for (char ch : text) {
        auto c = static_cast<unsigned char>(ch);
        if (c == 0) return invalid(text, "it contains a NUL byte");
        if (c < 0x20 || c == 0x7f) return invalid(text, "it contains a control character");
        if (c >= 0x80) return invalid(text, "it contains a non-ASCII character");
        if (c == ' ') return invalid(text, "it contains a space");
        if (c == '\\') return invalid(text, "it contains a backslash");
        if (c == '%') return invalid(text, "it contains '%' (percent-encoding is not accepted)");
    }

    std::string_view rest = text;
    bool hf = false;
    for (std::string_view prefix : {"https://huggingface.co/", "https://hf.co/", "huggingface.co/", "hf.co/"}) {
        if (starts_with_nocase(rest, prefix)) {
            rest.remove_prefix(prefix.size());
            hf = true;
            break;
        }
    }
    if (!hf && rest.find("://") != std::string_view::npos) return invalid(text, "only https://huggingface.co/ URLs are accepted");
    if (rest.empty()) return invalid(text, "the model part is empty");
    if (rest.find("..") != std::string_view::npos) return invalid(text, "it contains '..'");
    if (rest.front() == '/') return invalid(text, "it is an absolute path");

    model_name n;
    // The tag follows the last ':' of the last path segment; a ':' anywhere else (a host:port) is refused.
    size_t last_slash = rest.rfind('/');
    size_t colon = rest.rfind(':');
    if (colon != std::string_view::npos && (last_slash == std::string_view::npos || colon > last_slash)) {
        n.tag = std::string(rest.substr(colon + 1));
        if (n.tag.empty()) return invalid(text, "the tag after ':' is empty");
        rest = rest.substr(0, colon);
    }
    if (rest.find(':') != std::string_view::npos) return invalid(text, "':' may only separate the tag");

    std::vector<std::string_view> parts;
    for (size_t start = 0;;) {
        size_t slash = rest.find('/', start);
        parts.push_back(rest.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start));
        if (slash == std::string_view::npos) break;
        start = slash + 1;
    }
    for (auto p : parts) {
        if (p.empty()) return invalid(text, "it has an empty path component");
    }
    if (hf) {
        if (parts.size() != 2) return invalid(text, "Hugging Face names are hf.co/{owner}/{repo}[:{quant or file}]");
        n.host = std::string(hf_host);
        n.ns = std::string(parts[0]);
        n.model = std::string(parts[1]);
    } else if (parts.size() > 3) {
        return invalid(text, "it has more than 3 '/'-separated parts");
    } else {
        n.model = std::string(parts.back());
        if (parts.size() >= 2) n.ns = std::string(parts[parts.size() - 2]);
        if (parts.size() == 3) n.host = ascii_lower(parts[0]);
        // "local/hf.co/m" would be shown as "hf.co/m", which reads back as a (malformed) Hugging Face name.
        if (const std::string ns = ascii_lower(n.ns); ns == hf_host || ns == "huggingface.co")
            return invalid(text, "the namespace " + safe_quote(n.ns) + " is reserved for Hugging Face names");
    }

    const std::array<std::pair<std::string_view, const std::string *>, 4> components{
        {{"host", &n.host}, {n.is_hf() ? "owner" : "namespace", &n.ns}, {n.is_hf() ? "repo" : "model", &n.model}, {"tag", &n.tag}}};
    for (const auto & [what, value] : components) {
        if (std::string problem = check_component(what, *value); !problem.empty()) return invalid(text, problem);
    }
    if (n.is_hf()) {
        if (auto q = quant::canonical(n.tag)) n.tag = *q;
    }
    return n;
}

std::string model_name::full() const { return host + "/" + ns + "/" + model + ":" + tag; }

std::string model_name::display() const {
    if (host == default_host) return (ns == default_namespace ? model : ns + "/" + model) + ":" + tag;
    return full();
}

std::filesystem::path model_name::manifest_path(const std::filesystem::path & root) const {
    return root / "manifests" / host / ns / model / tag;
}

namespace {

std::string_view short_view(std::string_view name) {  // short_model_name without a copy
    for (std::string_view suffix : {std::string_view(":latest"), std::string_view(".gguf")})
        if (name.size() > suffix.size() && name.ends_with(suffix)) name.remove_suffix(suffix.size());
    return name;
}

}  // namespace

std::string short_model_name(std::string name) {
    name.resize(short_view(name).size());
    return name;
}

bool same_model_name(const std::string & a, const std::string & b) { return short_view(a) == short_view(b); }

}  // namespace rc::store
