#include "util/secret_scrub.h"

#include <regex>

namespace rc {

namespace {

const std::string redacted = "[redacted]";

struct rule {
    std::regex re;
    std::string with;
};

const std::vector<rule> & rules() {
    using std::regex_constants::icase;
    using std::regex_constants::ECMAScript;
    static const std::vector<rule> r = {
        // Authorization: Bearer x / Basic x / x
        {std::regex(R"((authorization["']?\s*[:=]\s*["']?)((?:bearer|basic|token)\s+)?[^\s"',;]+)", ECMAScript | icase), "$1$2" + redacted},
        {std::regex(R"((\bbearer\s+)[A-Za-z0-9._~+/=-]{6,})", ECMAScript | icase), "$1" + redacted},
        // flags: --api-key X, --api-keys=X, --token X, --password X
        {std::regex(R"((--[a-z-]*(?:api-keys?|token|password|secret)(?:[ =]))[^\s"']+)", ECMAScript | icase), "$1" + redacted},
        // key=value, "api_key": "value", token: value (names ending in key, token, password, secret)
        {std::regex(R"(([A-Za-z_-]*(?:key|keys|token|password|passwd|secret)["']?\s*[=:]\s*["']?)(?!\[redacted\])[^\s"',;&]+)", ECMAScript | icase),
         "$1" + redacted},
        // GitHub (classic and fine-grained) and Hugging Face tokens wherever they stand
        {std::regex(R"(\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|hf_[A-Za-z0-9]{20,})\b)"), redacted},
    };
    return r;
}

}  // namespace

std::string scrub_secrets(std::string_view line) {
    std::string out(line);
    for (const auto & r : rules()) out = std::regex_replace(out, r.re, r.with);
    return out;
}

std::string secret_scrubber::line(std::string_view text) {
    const bool begins = text.find("-----BEGIN") != std::string_view::npos && text.find("PRIVATE KEY-----") != std::string_view::npos;
    const bool ends = text.find("-----END") != std::string_view::npos && text.find("PRIVATE KEY-----") != std::string_view::npos;
    if (begins) in_private_key_ = true;
    if (in_private_key_ && !begins && !ends) return redacted;
    if (ends) in_private_key_ = false;
    return scrub_secrets(text);
}

std::vector<std::string> scrub_lines(const std::vector<std::string> & lines) {
    secret_scrubber s;
    std::vector<std::string> out;
    out.reserve(lines.size());
    for (const auto & l : lines) out.push_back(s.line(l));
    return out;
}

}  // namespace rc
