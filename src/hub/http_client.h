#pragma once
// A small HTTP GET client on libcurl for talking to the Hub: one easy handle per call (no shared state,
// so any thread may call concurrently), redirects followed, the token sent as a Bearer header.
// libcurl itself never sends that header to another host after a redirect (since 7.58), which is what
// keeps the token away from the CDN the Hub redirects file downloads to; nothing here loosens that.
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "hub/hub_config.h"
#include "util/result.h"

namespace rc::hub {

// The final response of a request (after redirects).
struct http_response {
    long status = 0;
    std::vector<std::pair<std::string, std::string>> headers;  // of the final response only
    std::string body;  // the buffered body for get(); the error body (bounded) for stream()

    // Case-insensitive; the last occurrence; empty when absent.
    std::string header(std::string_view name) const;
    bool is_success() const { return status >= 200 && status < 300; }
};

struct stream_callbacks {
    // Called once the final status and headers are known, before the first body byte (or at the end
    // for an empty body). Returning false aborts the transfer.
    std::function<bool(const http_response & head)> on_head;
    // Body bytes of a 2xx final response, in order. Returning false aborts. Bodies of other statuses
    // are buffered (up to 64 KiB) into the returned response instead, for the error message.
    std::function<bool(const char * data, size_t n)> on_body;
    // Polled between body chunks and at least once a second while the transfer stalls; true aborts.
    std::function<bool()> should_abort;
};

struct stream_outcome {
    http_response head;
    bool aborted = false;  // a callback stopped the transfer; the caller knows which and why
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
    // "Range: bytes=100-". No overall timeout, only the stall limit from hub_config. Transport failures
    // (including a connection dropped mid-body) are errors; a callback's abort is an outcome.
    result<stream_outcome> stream(const std::string & url, const std::vector<std::string> & headers,
                                  const stream_callbacks & cb) const;

    const hub_config & config() const { return cfg_; }

  private:
    result<stream_outcome> perform(const std::string & url, const std::vector<std::string> & headers,
                                   const stream_callbacks & cb, bool api_call) const;
    hub_config cfg_;
};

// The `rel="next"` URL of an RFC 8288 Link header value, or "".
std::string link_next(std::string_view link_header);

}  // namespace rc::hub
