#pragma once
// Where the Hugging Face Hub is and who we are to it. Read from the environment like the Hub's own
// tools: HF_ENDPOINT (mirrors, tests) and HF_TOKEN (gated and private repos).
// RUSTYCAGE_PULL_RETRIES, RUSTYCAGE_PULL_RETRY_DELAY and RUSTYCAGE_PULL_STALL_TIMEOUT tune how a
// download rides out a flaky link (retry_policy.h); `rustycage pull` has flags of the same names.
// The token is a secret: it goes only into an `Authorization: Bearer` header — never into a log line,
// a URL or an error message (hub_errors redacts it from any text the Hub sends back).
#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "hub/retry_policy.h"
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
    // A download that receives no byte for this long is abandoned as stalled and, like a dropped
    // connection, tried again from where it stopped (0: no stall detector, only the low-speed limit).
    std::chrono::milliseconds stall_timeout{30000};
    // How downloads try again after a dropped or stalled connection, a 5xx or a 429. The small JSON
    // calls (listings, search) are not retried: they fail fast and the caller says why.
    retry_settings retry;

    bool has_token() const { return !token.empty(); }
};

using getenv_fn = std::function<const char *(const char *)>;

// HF_ENDPOINT (default https://huggingface.co; trailing '/' trimmed) and HF_TOKEN (surrounding
// whitespace trimmed, since tokens are usually pasted). Errors (invalid_argument): an endpoint that is
// not http:// or https://, a token with control characters (it would corrupt the header).
// RUSTYCAGE_PULL_* as described below, when set (invalid_argument names the variable).
result<hub_config> config_from_env(const getenv_fn & getenv = nullptr);

// The download settings from text, as the RUSTYCAGE_PULL_* variables and the pull flags give them;
// `source` names the setting in the error ("--retries", "RUSTYCAGE_PULL_RETRIES"). Errors: invalid_argument.
//   retries:       0..1000, the attempts after the first (retry.max_attempts = retries + 1; default 7)
//   retry delay:   0..10m, the first backoff wait (retry.base_delay; default 1s)
//   stall timeout: 0 (off) or 1s..1h (default 30s)
// Durations: a number with ms, s or m ("250ms", "1.5s", "2m"); a bare number is seconds.
status set_retries(hub_config & cfg, std::string_view text, std::string_view source);
status set_retry_delay(hub_config & cfg, std::string_view text, std::string_view source);
status set_stall_timeout(hub_config & cfg, std::string_view text, std::string_view source);

// Environment variables of the download settings.
inline constexpr const char * env_pull_retries = "RUSTYCAGE_PULL_RETRIES";
inline constexpr const char * env_pull_retry_delay = "RUSTYCAGE_PULL_RETRY_DELAY";
inline constexpr const char * env_pull_stall_timeout = "RUSTYCAGE_PULL_STALL_TIMEOUT";

}  // namespace rc::hub
