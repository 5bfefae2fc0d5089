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

// Why a transfer failed below HTTP, so a caller can tell a flaky link (worth another attempt) from a
// request that cannot work.
enum class transport_failure {
    none,
    connect,    // refused, unreachable, or the TLS handshake broke off
    resolve,    // the host name did not resolve (DNS hiccups happen on flaky links too)
    timed_out,  // connect timeout, or slower than the low-speed limit
    reset,      // the connection was reset or broke (send/receive errors, an empty reply)
    cut_short,  // the server closed the connection before Content-Length bytes
    stalled,    // no byte arrived for hub_config::stall_timeout
    other,      // anything else (bad URL, TLS verification, out of memory): not retried
};
// "connection refused", "connection reset", "stalled", ...: short words for progress lines.
const char * describe(transport_failure f);
// Everything but none and other.
bool is_retryable(transport_failure f);

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
    // "Range: bytes=100-". No overall timeout, only the low-speed limit and the stall detector from
    // hub_config (no byte for stall_timeout ends the transfer). Transport failures (including a
    // connection dropped mid-body or stalled) are errors, their kind stored in `failure` when given;
    // a callback's abort is an outcome.
    result<stream_outcome> stream(const std::string & url, const std::vector<std::string> & headers,
                                  const stream_callbacks & cb, transport_failure * failure = nullptr) const;

    const hub_config & config() const { return cfg_; }

  private:
    result<stream_outcome> perform(const std::string & url, const std::vector<std::string> & headers,
                                   const stream_callbacks & cb, bool api_call, transport_failure * failure) const;
    hub_config cfg_;
};

// The `rel="next"` URL of an RFC 8288 Link header value, or "".
std::string link_next(std::string_view link_header);

}  // namespace rc::hub
