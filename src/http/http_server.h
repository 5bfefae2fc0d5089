#pragma once
// Our small HTTP interface (the library behind it is cpp-httplib from the pinned llama.cpp tree; no
// other file includes httplib.h). A handler returns a response; a streaming response carries a
// function that writes chunks on the connection's thread and learns when the client went away.
#include <chrono>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace rc::http {

struct http_request {
    std::string method;
    std::string path;
    std::string body;
    std::string remote_addr;
    std::string route;                                // the matched route pattern ("/v1/models/:id"); empty: none matched
    std::map<std::string, std::string> path_params;   // ":name" segments of the route pattern
    std::multimap<std::string, std::string> query;
    std::map<std::string, std::string> headers;       // names lower-cased
    std::function<bool()> client_gone;                // true once the client closed the connection

    std::string header(const std::string & lower_name) const {
        auto it = headers.find(lower_name);
        return it == headers.end() ? std::string() : it->second;
    }
};

// Writes one chunk; false when the client is gone (stop producing and cancel the work).
struct stream_sink {
    std::function<bool(std::string_view)> write;
    std::function<bool()> alive;
};

struct http_response {
    int status = 200;
    std::string content_type = "application/json";
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;
    std::function<void(stream_sink &)> stream;  // set: the body is produced by this, chunked
};

using http_handler = std::function<http_response(const http_request &)>;

// Delivers a request body in chunks to `sink` (false from the sink stops reading); returns false
// when the body could not be read whole (client gone, or stopped by the sink).
using body_reader = std::function<bool(const std::function<bool(const char *, size_t)> & sink)>;
using upload_handler = std::function<http_response(const http_request &, const body_reader &)>;

struct route {
    std::string method;   // GET, POST, DELETE, HEAD
    std::string pattern;  // "/v1/models" or "/v1/models/:id"; a trailing "*" matches any rest of path
    http_handler handler;
    // Set instead of `handler` for uploads (POST only): the body is streamed to the handler, which
    // applies its own limits; http_server_options::max_body_bytes does not apply.
    upload_handler upload = nullptr;
};

struct http_server_options {
    size_t max_body_bytes = 32u << 20;
    // Connections open at once (each holds a thread while it is open: streaming clients while they
    // stream, keep-alive clients while idle). One more is answered 503 with Retry-After and closed.
    int max_connections = 256;
    // A request's header block must arrive whole within this of its first byte (slowloris clients
    // trickle one); otherwise 408 and the connection is closed.
    std::chrono::milliseconds header_timeout{10000};
    size_t max_header_bytes = 64u << 10;              // a larger header block: 431, closed
    std::chrono::milliseconds keep_alive_idle{5000};  // a connection with no request (new or kept alive) is closed after this
    std::chrono::milliseconds read_timeout{60000};    // longest silence while a body is being read
    std::chrono::milliseconds write_timeout{600000};  // longest wait for a client to accept response bytes
    // Called exactly once for every request, also those no route matched (route empty) and those
    // the HTTP layer rejected (413, malformed): right before the response is written, or for a
    // streamed body once the stream function returned (before the final chunk). Either way a client
    // that has read the whole response finds it counted. `ms`: from the request's arrival. The
    // request's `body` is empty. Runs on the connection's thread; must not throw.
    std::function<void(const http_request &, int status, double ms)> on_complete;
    // Called for any request before routing and before its body is read; a returned response
    // short-circuits (auth, CORS), and the connection is then closed rather than the body read.
    std::function<std::unique_ptr<http_response>(const http_request &)> before;
    // Turns an exception escaping a handler into a response (the one error barrier).
    std::function<http_response(const http_request &, std::exception_ptr)> on_exception;
    // Body for an error status raised by the HTTP layer itself (404 no route, 413 body too large, …).
    std::function<http_response(const http_request &, int status)> on_status;
};

class http_server {
  public:
    http_server(std::vector<route> routes, http_server_options opts);
    ~http_server();
    http_server(const http_server &) = delete;
    http_server & operator=(const http_server &) = delete;

    // Binds exclusively (no SO_REUSEPORT: a second server on the same port fails here instead of
    // splitting the traffic); port 0 picks a free port. Returns the bound port. Errors: io
    // (address in use, not permitted, …).
    result<int> bind(const std::string & host, int port);
    // Serves until stop(); call after bind(), typically on its own thread.
    void serve();
    // Blocks until serve() accepts connections (call from another thread after starting serve()).
    void wait_until_serving();
    // Stops taking requests: a connection from now on is answered 503 (Retry-After) and closed, an
    // idle keep-alive connection closes, a request already read or waiting in its socket is served.
    void begin_drain();
    // A drain, then waits for every request taken to end (a stream: its last chunk), then stops.
    // Streams that never end by themselves must watch for the shutdown (api_context::stopping).
    void stop();

  private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

}  // namespace rc::http
