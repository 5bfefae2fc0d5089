#pragma once
// One client connection as our HTTP server reads it (internal to src/api; only http_server.cpp
// includes it). httplib parses each request; this class owns the socket's read buffer for the
// connection's whole life, so bytes a client sent ahead (pipelined requests in one write) wait for
// the next request instead of being dropped with a per-request buffer, and it reads the header
// block under a deadline, so a client trickling a header (slowloris) loses its connection instead
// of holding a thread for the read timeout. Used by one connection thread at a time.
#include <cpp-httplib/httplib.h>

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

namespace rc::http::detail {

class connection_stream final : public httplib::Stream {
  public:
    using clock = std::chrono::steady_clock;

    connection_stream(int fd, std::chrono::milliseconds read_timeout, std::chrono::milliseconds write_timeout);

    enum class header_state { complete, timed_out, too_large, closed };
    // Reads until the buffer holds a whole header block (up to the blank line), at most
    // `max_bytes`, by `deadline`. `stopping` is polled so a server shutdown is not held up.
    header_state read_header(clock::time_point deadline, size_t max_bytes, const std::function<bool()> & stopping);
    // Waits for the first byte of a next request: true at once when bytes are buffered, false
    // when none arrive within `idle` or the peer closed. Once `stopping` is true: false, unless
    // `take_waiting` and a request's bytes already wait in the socket — a client whose connection
    // was accepted before a shutdown but not read yet is answered, not cut.
    bool wait_for_request(std::chrono::milliseconds idle, const std::function<bool()> & stopping, bool take_waiting = false);
    // The buffered request line's method and target, when one has arrived (for error responses).
    void peek_request_line(std::string & method, std::string & target) const;
    // Writes all of `data` (within the write timeout); false when the peer is gone.
    bool write_all(const std::string & data);
    // Half-closes, drains what the peer still sends for a moment (so it sees our response rather
    // than a reset) and closes the socket.
    void close_gracefully();

    bool is_readable() const override;
    bool wait_readable() const override;
    bool wait_writable() const override;
    ssize_t read(char * ptr, size_t size) override;
    ssize_t write(const char * ptr, size_t size) override;
    void get_remote_ip_and_port(std::string & ip, int & port) const override;
    void get_local_ip_and_port(std::string & ip, int & port) const override;
    socket_t socket() const override { return fd_; }
    time_t duration() const override;
    void set_read_timeout(time_t sec, time_t usec) override;
    const char * buffered_data(size_t & size) const override;
    void consume_buffered(size_t size) override;

  private:
    size_t buffered() const { return end_ - off_; }
    // One recv() into the buffer after waiting up to `wait`: >0 bytes read, 0 closed or reset, -1 nothing yet.
    ssize_t fill(std::chrono::milliseconds wait);

    int fd_;
    std::chrono::milliseconds read_timeout_, write_timeout_;
    clock::time_point opened_ = clock::now();
    std::vector<char> buf_;
    size_t off_ = 0, end_ = 0;
    size_t scanned_ = 0;  // read_header: bytes after off_ already searched for the blank line
};

// Whether the client of a connection is still there, asked while a request is being handled (the
// engine cancels the work of a client that left). A client that sent its request and then closed
// its sending side (shutdown(SHUT_WR): some clients and proxies do) still wants the answer; one that
// closed the socket does not, and both look the same to a reader: the end of the stream. So at the
// end of the stream, before the response has started, an interim "HTTP/1.1 100 Continue" is sent
// once (RFC 9110 §15.2: every HTTP/1.1 client reads past 1xx responses): a closed socket answers
// it with a reset, seen at once on loopback and by the next check elsewhere; a half-closed client
// takes it and gets its response. HTTP/1.0 clients get no interim response: for them the end of
// the stream means gone. Thread-safe.
class client_presence {
  public:
    explicit client_presence(int fd) : fd_(fd) {}
    // A new request on the connection: `http11` whether it may be sent an interim response.
    void begin_request(bool http11);
    // The response (its head) is about to be written: no interim response may follow. `close`:
    // it says "Connection: close", and the connection ends after it.
    void responding(bool close);
    bool closing();
    bool gone();

  private:
    const int fd_;
    std::mutex mu_;
    bool http11_ = true;
    bool responding_ = false;
    bool closing_ = false;
    bool probed_ = false;
    bool gone_ = false;
};

}  // namespace rc::http::detail
