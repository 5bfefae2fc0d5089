#pragma once
// The project's one HTTP client, on libcurl: the Hub's listings and downloads, etcd's JSON gateway,
// GitHub's REST API, artifact downloads, peers' health, the gateway's calls to its hosts.
//
// Contract:
// * Stateless: one easy handle per call, so any thread may call concurrently; only the connections
//   of calls that ask to reuse them outlive a call (`reuse_connection`).
// * HTTP error statuses are replies, not errors. Errors are transport failures (errc::unavailable
//   with curl's message: refused, reset, timed out, stalled), their kind given as a
//   `transport_failure` so a caller can tell a flaky link from a request that cannot work.
// * Only http and https, also after a redirect. Redirects are followed only when asked, and libcurl
//   never sends an Authorization header to another host after one (since 7.58).
// * Nothing here logs. Header values (tokens) are never copied into error messages.
#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/result.h"

namespace rc::http {

struct client_request {
    std::string method = "GET";
    std::string url;
    std::vector<std::string> headers;  // "Name: value"
    std::string body;                  // sent for any method when non-empty (or when method is POST/PUT/PATCH)
    std::chrono::milliseconds timeout{10000};  // the whole call; 0: none (streams, downloads)
    std::chrono::milliseconds connect_timeout{2000};
    // A call that receives no byte for this long ends as `stalled`; 0: off.
    std::chrono::milliseconds stall_timeout{0};
    // Slower than `low_speed_bytes` per second for `low_speed_time` ends as `timed_out`; 0: off.
    long low_speed_bytes = 0;
    std::chrono::seconds low_speed_time{0};
    // Keep the connection open after the call for the next call to the same host and port (one
    // pool shared by every thread; libcurl checks a kept connection is alive before it reuses it).
    // The gateway's calls to its hosts: a fresh TCP connection per forwarded chat was most of what
    // it added to a request.
    bool reuse_connection = false;
    bool follow_redirects = false;  // up to 10
    bool accept_compressed = false;  // gzip/deflate bodies (JSON); file bodies must stay raw
    std::string user_agent = "rustycage";
    // TLS (https:// URLs): the CA to verify the server with (default: the system's), and a client
    // certificate and its key (PEM files) when the server asks for one.
    std::string ca_file, cert_file, key_file;
};

struct client_reply {
    long status = 0;
    std::vector<std::pair<std::string, std::string>> headers;  // of the final response only (after redirects)
    std::string body;     // call(): the body; stream(): a non-2xx body (at most 1 MiB kept)
    bool stopped = false;  // stream(): a handler stopped the transfer — an outcome, not an error

    std::string header(std::string_view name) const;  // case-insensitive, last occurrence, "" when absent
    bool ok() const { return status >= 200 && status < 300; }
};

// Why a call failed below HTTP.
enum class transport_failure {
    none,
    connect,    // refused, unreachable, or the TLS handshake broke off
    resolve,    // the host name did not resolve (DNS hiccups happen on flaky links too)
    timed_out,  // the call's timeout or connect timeout, or slower than the low-speed limit
    reset,      // the connection was reset or broke (send/receive errors, an empty reply)
    cut_short,  // the server closed the connection before Content-Length bytes
    stalled,    // no byte arrived for stall_timeout
    other,      // anything else (bad URL, TLS verification, a body over 64 MiB): not worth retrying
};
// "cannot connect", "connection reset", "stalled", ...: short words for progress lines.
const char * describe(transport_failure f);
// Everything but none and other.
bool is_retryable(transport_failure f);

// `s` percent-encoded for a URL's path segment or query value (RFC 3986 unreserved characters kept).
std::string url_encode(std::string_view s);

// One call, the body buffered (at most 64 MiB).
result<client_reply> call(const client_request & req, transport_failure * failure = nullptr);

struct stream_handlers {
    // The final status and headers, once, right before the first body byte (or at the end of an
    // empty body), whatever the status. false stops the transfer. A relay decides here whether to
    // commit to this answer; a download whether the server honoured its Range.
    std::function<bool(const client_reply & head)> on_head;
    // Body bytes of a 2xx reply as they arrive; false stops the transfer.
    std::function<bool(std::string_view data)> on_data;
    // Polled between body chunks and at least once a second while the transfer is idle; true stops it.
    std::function<bool()> should_stop;
};

// A streamed call (downloads, etcd's watches and campaigns, a relayed generation). A stop by a
// handler is an outcome (`stopped`), not an error.
result<client_reply> stream(const client_request & req, const stream_handlers & handlers, transport_failure * failure = nullptr);
// The same with a body handler and a stop check only (etcd's watches, tests' streamed calls).
inline result<client_reply> stream(const client_request & req, std::function<bool(std::string_view)> on_data, std::function<bool()> should_stop) {
    return stream(req, stream_handlers{nullptr, std::move(on_data), std::move(should_stop)});
}

}  // namespace rc::http
