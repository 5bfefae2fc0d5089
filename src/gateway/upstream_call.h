#pragma once
// Calls to hosts: one forwarded request (an upstream_attempt, which a client's connection thread
// waits on and then relays), and parallel fan-outs (lookups, model listings), all through the
// the project's one libcurl client (http/http_client.h).
//
// An upstream_attempt runs its transfer on its own thread so the gateway can decide before it
// answers the client:
// * A streamed answer (text/event-stream, application/x-ndjson) commits at its first body byte:
//   wait() returns `streaming` and relay() copies chunks to the client as they arrive. Until then
//   nothing reached the client, so a failure is `failed` and the caller may try another host.
// * Any other answer is buffered whole (`complete`: status, headers, body); a failure before its end
//   is `failed` too — the client has received nothing.
// * The client leaving stops the transfer (curl closes the connection: the host cancels the
//   generation). `abandon_waiting` (before the first byte) and `abandon_streaming` (after) are
//   polled about once a second and stop it too (the host left `up`, or went `down`).
// Contract: wait() and relay() from one thread (the client's); the destructor stops and joins.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "http/http_server.h"
#include "http/http_client.h"
#include "gateway/route_planner.h"

namespace rc::gateway {
using namespace rc::http;  // written against the HTTP shell (src/http)

class upstream_attempt {
  public:
    enum class outcome { streaming, complete, failed, client_gone };
    struct relay_end {
        bool client_gone = false;
        std::string error;  // non-empty: the upstream broke mid-stream (why)
    };

    upstream_attempt(http::client_request req, std::function<bool()> abandon_waiting, std::function<bool()> abandon_streaming,
                     std::shared_ptr<void> inflight_token = nullptr);
    ~upstream_attempt();
    upstream_attempt(const upstream_attempt &) = delete;
    upstream_attempt & operator=(const upstream_attempt &) = delete;

    // Blocks until the answer commits (streaming), is complete, failed, or the client left.
    outcome wait(const std::function<bool()> & client_gone);

    long status() const;
    std::string header(const std::string & name) const;
    std::string content_type() const { return header("Content-Type"); }
    const std::string & body() const { return body_; }    // complete
    const std::string & error() const { return error_; }  // failed: why, for people

    // Streaming: writes every chunk to `sink` until the upstream ends or the client leaves.
    relay_end relay(http::stream_sink & sink);

  private:
    void work(http::client_request req);

    std::function<bool()> abandon_waiting_, abandon_streaming_;
    std::shared_ptr<void> inflight_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    enum class phase { waiting, streaming, complete, failed } phase_ = phase::waiting;
    http::client_reply head_;
    std::string body_, error_;
    std::deque<std::string> chunks_;
    size_t queued_bytes_ = 0;
    bool ended_ = false;       // streaming: the transfer is over (error_ says why when it broke)
    bool stop_ = false;        // the client left or the attempt is being destroyed
    std::thread worker_;
};

// The frame that ends a stream whose upstream broke, in the stream's own framing: an NDJSON
// {"error":…} line for Ollama, an SSE `data: {"error":{…}}` event for OpenAI (an `error` event for
// /v1/responses), so the official clients raise it instead of returning a truncated answer.
std::string stream_error_frame(const std::string & path, const std::string & content_type, const std::string & message);

// Runs the requests at once (one thread each) and returns their results in order.
std::vector<result<http::client_reply>> parallel_calls(const std::vector<http::client_request> & requests);

// What one host answered to POST /v1/kv/lookup: nullopt when it did not answer in time or not with a
// lookup (busy / slots are -1 / 0 then).
struct lookup_reply {
    std::optional<kv_answer> answer;
    int busy = -1, slots = 0;
    std::string error;
};
lookup_reply parse_lookup_reply(const result<http::client_reply> & r);

}  // namespace rc::gateway
