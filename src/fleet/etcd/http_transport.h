#pragma once
// The fleet's one door to libcurl: plain request/response calls (etcd's JSON gateway, GitHub's REST
// API, the local server's routes, peers' health) and streamed responses (etcd's watch and
// election campaigns, which answer for as long as they last).
//
// Contract:
// * Stateless: one easy handle per call, so any thread may call concurrently.
// * HTTP error statuses are replies, not errors. Errors are transport failures (errc::unavailable
//   with curl's message: refused, reset, timed out) — the caller decides whether to fail over.
// * Nothing here logs. Header values (tokens) are never copied into error messages.
//
// Why not src/hub/http_client: that one is GET-only and bound to the Hub's configuration (HF token,
// redaction of it, stall limits tuned for downloads); the fleet needs POST/PATCH with bodies, per-call
// timeouts of a few hundred milliseconds for health probes, and an abortable streamed POST.
#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/result.h"

namespace rc::fleet {

struct http_request {
    std::string method = "GET";
    std::string url;
    std::vector<std::string> headers;  // "Name: value"
    std::string body;                  // sent for any method when non-empty (or when method is POST/PUT/PATCH)
    std::chrono::milliseconds timeout{10000};          // whole call; 0: none (streams)
    std::chrono::milliseconds connect_timeout{2000};
    // TLS (https:// URLs): the CA to verify the server with (default: the system's), and a client
    // certificate and its key (PEM files) when the server asks for one.
    std::string ca_file, cert_file, key_file;
};

struct http_reply {
    long status = 0;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;

    std::string header(std::string_view name) const;  // case-insensitive, last occurrence, "" when absent
    bool ok() const { return status >= 200 && status < 300; }
};

// One call, body buffered (at most 64 MiB).
result<http_reply> http_call(const http_request & req);

// A streamed call: `on_data` receives body bytes as they arrive (false stops the transfer, which is
// then an outcome, not an error); `should_stop` is polled at least every `poll` while the stream
// is idle (true stops it). The reply carries the status, headers and, for non-2xx, the body.
result<http_reply> http_stream(const http_request & req, const std::function<bool(std::string_view)> & on_data,
                               const std::function<bool()> & should_stop);
// The same, and `on_head` sees the status and headers of a 2xx reply once, right before its first
// body byte reaches `on_data` (false stops the transfer). A relay (the gateway) decides there
// whether to commit to this answer.
result<http_reply> http_stream(const http_request & req, const std::function<bool(const http_reply & head)> & on_head,
                               const std::function<bool(std::string_view)> & on_data, const std::function<bool()> & should_stop);

}  // namespace rc::fleet
