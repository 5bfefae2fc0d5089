#include "hub/hub_config.h"
#include "util/ascii.h"

#include <cmath>
#include <cstdlib>
#include <optional>
#include <utility>

namespace rc::hub {

#ifndef RC_HUB_VERSION
#define RC_HUB_VERSION "dev"
#endif

std::string default_user_agent() {
    std::string version = RC_HUB_VERSION;
    return "rustycage/" + (version.empty() ? std::string("dev") : version);
}

namespace {

// "250ms", "1.5s", "2m", or a bare number of seconds; nullopt for anything else.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
    std::string t(trim(text));
    double scale = 1000;  // to milliseconds
    if (t.ends_with("ms")) scale = 1, t.resize(t.size() - 2);
    else if (t.ends_with("s")) t.pop_back();
    else if (t.ends_with("m")) scale = 60000, t.pop_back();
    if (t.empty() || t.find_first_not_of("0123456789.") != std::string::npos || t.find('.') != t.rfind('.') || t == ".") return std::nullopt;
    const double v = std::strtod(t.c_str(), nullptr) * scale;
    if (!std::isfinite(v) || v > 1e12) return std::nullopt;
    return std::chrono::milliseconds(std::llround(v));
}

std::string quoted(std::string_view text) {
    std::string q(text.substr(0, 64));
    for (char & c : q)
        if ((unsigned char) c < 0x20 || c == 0x7f) c = '?';
    return "'" + q + "'";
}

}  // namespace

status set_retries(hub_config & cfg, std::string_view text, std::string_view source) {
    const std::string t(trim(text));
    if (t.empty() || t.size() > 4 || t.find_first_not_of("0123456789") != std::string::npos || std::stoi(t) > 1000)
        return make_error(errc::invalid_argument, std::string(source) + " must be a whole number of retries from 0 to 1000, got " + quoted(text));
    cfg.retry.max_attempts = std::stoi(t) + 1;
    return {};
}

status set_retry_delay(hub_config & cfg, std::string_view text, std::string_view source) {
    auto d = parse_duration(text);
    if (!d || *d > std::chrono::minutes(10))
        return make_error(errc::invalid_argument, std::string(source) + " must be a duration from 0 to 10m such as 500ms or 2s, got " + quoted(text));
    cfg.retry.base_delay = *d;
    return {};
}

status set_stall_timeout(hub_config & cfg, std::string_view text, std::string_view source) {
    auto d = parse_duration(text);
    if (!d || (d->count() != 0 && (*d < std::chrono::seconds(1) || *d > std::chrono::hours(1))))
        return make_error(errc::invalid_argument, std::string(source) + " must be 0 (off) or a duration from 1s to 1h such as 30s, got " + quoted(text));
    cfg.stall_timeout = *d;
    return {};
}

result<hub_config> config_from_env(const getenv_fn & getenv) {
    auto env = [&](const char * name) -> std::string {
        const char * v = getenv ? getenv(name) : std::getenv(name);
        return v ? std::string(trim(v)) : std::string();
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
    using setter = status (*)(hub_config &, std::string_view, std::string_view);
    for (auto [name, set] : {std::pair<const char *, setter>{env_pull_retries, set_retries}, {env_pull_retry_delay, set_retry_delay},
                             {env_pull_stall_timeout, set_stall_timeout}}) {
        if (std::string v = env(name); !v.empty())
            if (auto st = set(cfg, v, name); !st) return st.err();
    }
    return cfg;
}

}  // namespace rc::hub
