#pragma once
// The shell both HTTP services share — `serve`'s api_server and the fleet gateway — so that every
// port behaves the same wherever it runs: which paths are public, the server options built from the
// listen flags (body, connection and header limits, API keys, the error shapes of both dialects,
// Retry-After on 503 and 429, the access record), CORS on every route, and the listeners. A service
// brings its routes and its metrics; everything else is here, once.
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "http/http_server.h"
#include "util/result.h"

namespace rc::http {

// The listen flags every service takes (--max-body-mb, --max-connections, --header-timeout).
struct shell_limits {
    size_t max_body_bytes = 32u << 20;
    int max_connections = 256;                        // per listener; more are answered 503
    std::chrono::milliseconds header_timeout{10000};  // a request header must arrive whole within this
};

// Health, version and metrics stay reachable without a key: load balancers and Prometheus scrapers
// probe them, and they carry no prompts or outputs.
bool is_public_path(const std::string & path);

struct shell_hooks {
    std::vector<std::string> api_keys;                   // clients must present one; empty: no auth
    std::function<bool(const std::string &)> is_public;  // more public paths (the console's pages); may be empty
    std::function<void(const http_request &, int status, double ms)> on_complete;  // metrics, access log
    std::string log_component = "api";                   // names the service in the log of an unhandled error
};

// The options of one listener: the limits, `before` (CORS preflight and API keys, before any body
// is read), the error barrier (api_error → its status; anything else → 500, logged) and the HTTP
// layer's own refusals (404, 408, 413, 431, 503) in the dialect of the path, each with CORS headers
// and, for 503 and 429, Retry-After.
http_server_options shell_options(const shell_limits & limits, shell_hooks hooks);

// `routes` with CORS headers on every response, plus OPTIONS on every path (the preflight `before`
// answers; without a route the HTTP layer would answer it 404 first).
std::vector<route> with_cors(std::vector<route> routes);

// A service's listeners: one http_server per port, each serving on a thread of its own.
class listeners {
  public:
    listeners() = default;
    ~listeners();
    listeners(const listeners &) = delete;
    listeners & operator=(const listeners &) = delete;

    // Binds every port in `ports` (0: a free one) on `host`, each with a route table from `routes`,
    // then serves them all. Errors: io (nothing is left listening).
    status start(const std::string & host, const std::vector<int> & ports, const std::function<std::vector<route>()> & routes,
                 const http_server_options & options);
    void stop();
    // The bound port of ports[i] (-1 when there is none).
    int port(size_t i) const { return i < ports_.size() ? ports_[i] : -1; }

  private:
    std::vector<std::unique_ptr<http_server>> servers_;
    std::vector<std::thread> threads_;
    std::vector<int> ports_;
};

}  // namespace rc::http
