#pragma once
// Where the Hugging Face Hub is and who we are to it. Read from the environment like the Hub's own
// tools: HF_ENDPOINT (mirrors, tests) and HF_TOKEN (gated and private repos).
// The token is a secret: it goes only into an `Authorization: Bearer` header — never into a log line,
// a URL or an error message (hub_errors redacts it from any text the Hub sends back).
#include <functional>
#include <string>

#include "util/result.h"

namespace rc::hub {

inline constexpr const char * default_endpoint = "https://huggingface.co";

// "rustycage/<version>", or "rustycage/dev" when built without a version.
std::string default_user_agent();

struct hub_config {
    std::string endpoint = default_endpoint;  // scheme://host[:port][/prefix], never a trailing '/'
    std::string token;                        // empty: anonymous
    std::string user_agent = default_user_agent();

    long connect_timeout_s = 15;
    // A transfer slower than low_speed_bytes per second for low_speed_time_s is abandoned as stalled
    // (downloads have no overall limit: a 40 GB file may take hours and that is fine).
    long low_speed_bytes = 1024;
    long low_speed_time_s = 60;
    long api_timeout_s = 120;  // overall limit for the small JSON calls

    bool has_token() const { return !token.empty(); }
};

using getenv_fn = std::function<const char *(const char *)>;

// HF_ENDPOINT (default https://huggingface.co; trailing '/' trimmed) and HF_TOKEN (surrounding
// whitespace trimmed, since tokens are usually pasted). Errors (invalid_argument): an endpoint that is
// not http:// or https://, a token with control characters (it would corrupt the header).
result<hub_config> config_from_env(const getenv_fn & getenv = nullptr);

}  // namespace rc::hub
