#pragma once
// The writing end of a streamed reply (SSE or NDJSON) for a generation: writes chunks, and when the
// stream has been silent for keep_alive_after — a long prefill, a tool call the dialect sends whole
// at the end — writes the dialect's keep-alive so proxies and clients do not take the silence for a
// dead connection. Noticing a client that left is the session's job (it asks `alive()` every few
// hundred milliseconds, writing or not).
#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

#include "http/http_server.h"

namespace rc::http {

inline constexpr std::chrono::seconds keep_alive_after{5};

class stream_writer {
  public:
    using clock = std::chrono::steady_clock;

    // `keep_alive` makes the bytes of one keep-alive (an SSE comment, an empty NDJSON chunk), written
    // after `quiet` without a write.
    stream_writer(stream_sink & sink, std::function<std::string()> keep_alive, clock::duration quiet = keep_alive_after)
        : sink_(sink), keep_alive_(std::move(keep_alive)), quiet_(quiet), last_write_(clock::now()) {}

    // False once the client is gone: stop producing.
    bool write(std::string_view chunk) {
        last_write_ = clock::now();
        return sink_.write(chunk);
    }
    bool alive() const { return sink_.alive(); }
    // Called while nothing happens: a keep-alive when the stream was silent long enough.
    bool idle() {
        if (!keep_alive_ || clock::now() - last_write_ < quiet_) return true;
        return write(keep_alive_());
    }

  private:
    stream_sink & sink_;
    std::function<std::string()> keep_alive_;
    clock::duration quiet_;
    clock::time_point last_write_;
};

// A streamed response whose body `produce` writes through a stream_writer.
inline http_response streamed_response(std::string content_type, std::function<std::string()> keep_alive,
                                       std::function<void(stream_writer &)> produce) {
    http_response r;
    r.content_type = std::move(content_type);
    r.headers.push_back({"Cache-Control", "no-cache"});
    r.stream = [keep_alive = std::move(keep_alive), produce = std::move(produce)](stream_sink & sink) {
        stream_writer w(sink, keep_alive);
        produce(w);
    };
    return r;
}

}  // namespace rc::http
