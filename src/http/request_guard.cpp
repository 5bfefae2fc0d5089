#include "http/request_guard.h"

#include <strings.h>

#include "http/api_error.h"
#include "util/ascii.h"

namespace rc::http {

namespace {

const char * cors_allow_headers = "Authorization, Content-Type, OpenAI-Organization, OpenAI-Project, OpenAI-Beta, X-Stainless-Arch, "
                                  "X-Stainless-Lang, X-Stainless-OS, X-Stainless-Package-Version, X-Stainless-Runtime, "
                                  "X-Stainless-Runtime-Version, X-Stainless-Retry-Count, X-Stainless-Timeout, X-Stainless-Async, "
                                  "X-Stainless-Helper-Method, X-Stainless-Poll-Helper, X-Stainless-Custom-Poll-Interval, "
                                  "X-Requested-With, User-Agent, Accept";

// The key a request presents: `Authorization: Bearer <key>` (scheme case-insensitive), else
// `x-api-key`. Empty when it presents none.
std::string presented_key(const http_request & req) {
    const std::string auth(trim(req.header("authorization")));
    if (auth.size() > 7 && strncasecmp(auth.c_str(), "bearer ", 7) == 0) return std::string(trim(auth.substr(7)));
    return std::string(trim(req.header("x-api-key")));
}

// Compares in time that depends on the lengths only, so response timing does not reveal how much
// of a guess was right.
bool same_key(const std::string & a, const std::string & b) {
    if (a.size() != b.size()) return false;
    unsigned char diff = 0;
    for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
    return diff == 0;
}

bool key_accepted(const std::vector<std::string> & keys, const std::string & presented) {
    if (presented.empty()) return false;  // never, whatever the key list holds
    bool ok = false;
    for (const auto & k : keys) ok = same_key(k, presented) || ok;
    return ok;
}

}  // namespace

void add_cors(http_response & r, const http_request & req) {
    std::string origin = req.header("origin");
    r.headers.push_back({"Access-Control-Allow-Origin", origin.empty() ? "*" : origin});
    r.headers.push_back({"Vary", "Origin"});
}

std::unique_ptr<http_response> guard_request(const http_request & req, const std::vector<std::string> & keys, bool is_public) {
    if (req.method == "OPTIONS") {
        auto r = std::make_unique<http_response>();
        r->status = 204;
        r->content_type = "text/plain";
        add_cors(*r, req);
        r->headers.push_back({"Access-Control-Allow-Methods", "GET, POST, DELETE, HEAD, OPTIONS"});
        r->headers.push_back({"Access-Control-Allow-Headers", cors_allow_headers});
        r->headers.push_back({"Access-Control-Max-Age", "86400"});
        return r;
    }
    if (keys.empty() || is_public) return nullptr;
    if (key_accepted(keys, presented_key(req))) return nullptr;
    auto r = std::make_unique<http_response>(error_response(dialect_for_path(req.path), 401, "invalid or missing API key"));
    r->headers.push_back({"WWW-Authenticate", "Bearer"});
    add_cors(*r, req);
    return r;
}

status check_api_keys(const std::vector<std::string> & keys) {
    for (size_t i = 0; i < keys.size(); ++i) {
        const std::string & k = keys[i];
        const std::string which = "API key " + std::to_string(i + 1) + " of " + std::to_string(keys.size());
        if (k.empty()) return make_error(errc::invalid_argument, which + " is empty (an unset variable?): auth would be on with a key nobody can send");
        if (k.size() > 4096) return make_error(errc::invalid_argument, which + " is longer than 4096 bytes");
        for (unsigned char c : k) {
            if (c <= 0x20 || c >= 0x7f)
                return make_error(errc::invalid_argument, which + " holds a space, control or non-ASCII character; keys travel in an HTTP header");
        }
    }
    return {};
}

}  // namespace rc::http
