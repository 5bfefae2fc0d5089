#pragma once
// GET calls to the Hub on the project's one HTTP client: redirects followed, the token sent as a
// Bearer header and redacted from every error. libcurl never sends that header to another host after
// a redirect (since 7.58), which is what keeps the token away from the CDN the Hub redirects file
// downloads to; nothing here loosens that. Any thread may call concurrently.
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "http/http_client.h"
#include "hub/hub_config.h"
#include "util/result.h"

namespace rc::hub {

// The Hub's calls go through the project's one client (http/http_client.h); its reply, handlers and
// failure kinds are the Hub's too.
using http_response = http::client_reply;
using stream_callbacks = http::stream_handlers;
using http::describe;
using http::is_retryable;
using http::transport_failure;

struct stream_outcome {
    http_response head;
    bool aborted = false;  // a handler stopped the transfer; the caller knows which and why
};

class http_client {
  public:
    explicit http_client(hub_config cfg);

    // GET with the body buffered (at most 64 MiB). HTTP error statuses are responses, not errors;
    // errors are transport failures (errc::unavailable, with curl's message).
    result<http_response> get(const std::string & url) const;

    // GET and parse a JSON body. Non-2xx statuses become errors through error_for_status(); `what`
    // names the resource in messages ("repository acme/x"). `next_link`, when given, receives the
    // URL of a `Link: <...>; rel="next"` header (the Hub paginates long listings), or "".
    result<nlohmann::json> get_json(const std::string & url, std::string_view what, std::string * next_link = nullptr) const;

    // GET streaming the body to callbacks (downloads); `headers` are extra request headers such as
    // "Range: bytes=100-". No overall timeout, only the low-speed limit and the stall detector from
    // hub_config (no byte for stall_timeout ends the transfer). Transport failures (including a
    // connection dropped mid-body or stalled) are errors, their kind stored in `failure` when given;
    // a callback's abort is an outcome.
    result<stream_outcome> stream(const std::string & url, const std::vector<std::string> & headers,
                                  const stream_callbacks & cb, transport_failure * failure = nullptr) const;

    const hub_config & config() const { return cfg_; }

  private:
    http::client_request request(const std::string & url, const std::vector<std::string> & headers) const;
    hub_config cfg_;
};

// The `rel="next"` URL of an RFC 8288 Link header value, or "".
std::string link_next(std::string_view link_header);

}  // namespace rc::hub
