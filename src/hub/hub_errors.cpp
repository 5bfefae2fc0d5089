#include "hub/hub_errors.h"

namespace rc::hub {

namespace {

// The Hub's own explanation: X-Error-Message, else a JSON body's "error" (string or {message}).
std::string server_message(const http_response & r) {
    std::string msg = r.header("X-Error-Message");
    if (msg.empty() && !r.body.empty()) {
        auto j = nlohmann::json::parse(r.body, nullptr, false);
        if (j.is_object() && j.contains("error")) {
            const auto & e = j["error"];
            if (e.is_string()) msg = e.get<std::string>();
            else if (e.is_object() && e.contains("message") && e["message"].is_string()) msg = e["message"].get<std::string>();
        }
    }
    // Keep messages one short printable line: they end up in logs and API answers.
    if (msg.size() > 200) msg = msg.substr(0, 200) + "...";
    for (char & c : msg)
        if ((unsigned char) c < 0x20 || c == 0x7f) c = ' ';
    return msg;
}

}  // namespace

std::string redact(std::string text, std::string_view secret) {
    if (secret.empty()) return text;
    for (size_t pos = text.find(secret); pos != std::string::npos; pos = text.find(secret, pos))
        text.replace(pos, secret.size(), "<redacted>");
    return text;
}

error error_for_status(const http_response & r, std::string_view what, const hub_config & cfg) {
    const std::string code = r.header("X-Error-Code");
    const std::string said = server_message(r);
    std::string http = "HTTP " + std::to_string(r.status) + (said.empty() ? "" : ": " + said);
    auto make = [&](errc c, std::string m) { return make_error(c, redact(std::move(m), cfg.token)); };

    if (code == "RepoNotFound" || code == "RevisionNotFound" || code == "EntryNotFound" || r.status == 404) {
        std::string m = std::string(what) + " not found on the Hub (" + http + ")";
        if (code == "RepoNotFound" && !cfg.has_token()) m += "; if it is private, set HF_TOKEN to an access token";
        return make(errc::not_found, m);
    }
    if (code == "GatedRepo" || r.status == 401 || r.status == 403) {
        std::string m = "access to " + std::string(what) + " denied by the Hub (" + http + "); ";
        if (cfg.has_token())
            m += "check that the token in HF_TOKEN is valid and has been granted access to this repository";
        else
            m += "the repository may be gated or private: accept its terms on the Hub and set HF_TOKEN to an access token";
        return make(r.status == 401 ? errc::unauthenticated : errc::permission_denied, m);
    }
    if (r.status == 429) {
        std::string m = "the Hub is rate-limiting requests for " + std::string(what) + " (" + http + ")";
        if (std::string after = r.header("Retry-After"); !after.empty()) m += "; retry after " + after + " s";
        return make(errc::unavailable, m);
    }
    if (r.status >= 500) return make(errc::unavailable, "the Hub failed to serve " + std::string(what) + " (" + http + ")");
    return make(errc::invalid_argument, "the Hub refused the request for " + std::string(what) + " (" + http + ")");
}

}  // namespace rc::hub
