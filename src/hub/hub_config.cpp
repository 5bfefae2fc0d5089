#include "hub/hub_config.h"

#include <cstdlib>

namespace rc::hub {

#ifndef RC_HUB_VERSION
#define RC_HUB_VERSION "dev"
#endif

std::string default_user_agent() {
    std::string version = RC_HUB_VERSION;
    return "rustycage/" + (version.empty() ? std::string("dev") : version);
}

namespace {

std::string trim(std::string s) {
    auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
    while (!s.empty() && is_space(s.back())) s.pop_back();
    size_t i = 0;
    while (i < s.size() && is_space(s[i])) ++i;
    return s.substr(i);
}

}  // namespace

result<hub_config> config_from_env(const getenv_fn & getenv) {
    auto env = [&](const char * name) -> std::string {
        const char * v = getenv ? getenv(name) : std::getenv(name);
        return v ? trim(v) : std::string();
    };
    hub_config cfg;
    if (std::string endpoint = env("HF_ENDPOINT"); !endpoint.empty()) {
        while (endpoint.ends_with('/')) endpoint.pop_back();
        bool http = endpoint.starts_with("http://") || endpoint.starts_with("https://");
        if (!http || endpoint.find_first_of(" \t\r\n?#") != std::string::npos || endpoint.ends_with(":/"))
            return make_error(errc::invalid_argument, "HF_ENDPOINT must be an http:// or https:// URL, got '" + endpoint + "'");
        cfg.endpoint = std::move(endpoint);
    }
    cfg.token = env("HF_TOKEN");
    for (unsigned char c : cfg.token) {
        // Deliberately not echoing the value: it is a secret even when malformed.
        if (c < 0x20 || c == 0x7f) return make_error(errc::invalid_argument, "HF_TOKEN contains control characters");
    }
    return cfg;
}

}  // namespace rc::hub
