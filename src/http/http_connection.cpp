#include "http/http_connection.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace rc::http::detail {

namespace {

constexpr size_t k_read_chunk = 16 * 1024;
// How often waits look at `stopping`: a shutdown is noticed within this.
constexpr std::chrono::milliseconds k_poll_slice{100};

// poll() for `events` up to `wait`; >0 ready, 0 timed out, <0 error.
int wait_for(int fd, short events, std::chrono::milliseconds wait) {
    pollfd p{fd, events, 0};
    for (;;) {
        int r = ::poll(&p, 1, static_cast<int>(std::max<std::chrono::milliseconds::rep>(0, wait.count())));
        if (r < 0 && errno == EINTR) continue;
        return r;
    }
}

void address_of(const sockaddr_storage & addr, socklen_t len, std::string & ip, int & port) {
    char host[NI_MAXHOST] = "";
    char serv[NI_MAXSERV] = "";
    if (::getnameinfo(reinterpret_cast<const sockaddr *>(&addr), len, host, sizeof host, serv, sizeof serv, NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
        ip = host;
        port = std::atoi(serv);
    }
}

}  // namespace

connection_stream::connection_stream(int fd, std::chrono::milliseconds read_timeout, std::chrono::milliseconds write_timeout)
    : fd_(fd), read_timeout_(read_timeout), write_timeout_(write_timeout) {}

ssize_t connection_stream::fill(std::chrono::milliseconds wait) {
    if (wait_for(fd_, POLLIN, wait) <= 0) return -1;
    if (off_ == end_) off_ = end_ = 0;
    if (buf_.size() - end_ < k_read_chunk) {
        // Move what is unread to the front before growing: the buffer stays the size of one
        // header block plus a chunk, however long the connection lives.
        if (off_ > 0) {
            std::memmove(buf_.data(), buf_.data() + off_, end_ - off_);
            end_ -= off_;
            off_ = 0;
        }
        if (buf_.size() - end_ < k_read_chunk) buf_.resize(end_ + k_read_chunk);
    }
    for (;;) {
        ssize_t n = ::recv(fd_, buf_.data() + end_, buf_.size() - end_, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return 0;  // closed, or reset: either way nothing more comes
        end_ += static_cast<size_t>(n);
        return n;
    }
}

connection_stream::header_state connection_stream::read_header(clock::time_point deadline, size_t max_bytes,
                                                               const std::function<bool()> & stopping) {
    static constexpr std::string_view blank_line = "\r\n\r\n";
    for (;;) {
        // Search only what has not been searched yet (less the terminator's length, which may straddle).
        const size_t from = off_ + (scanned_ > 3 ? scanned_ - 3 : 0);
        std::string_view window(buf_.data() + from, end_ - from);
        if (window.find(blank_line) != std::string_view::npos) {
            scanned_ = 0;
            return header_state::complete;
        }
        scanned_ = buffered();
        if (buffered() >= max_bytes) return header_state::too_large;
        const auto now = clock::now();
        if (now >= deadline) return header_state::timed_out;
        if (stopping && stopping()) return header_state::closed;
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now) + std::chrono::milliseconds(1);
        if (fill(std::min(left, k_poll_slice)) == 0) return header_state::closed;
    }
}

bool connection_stream::wait_for_request(std::chrono::milliseconds idle, const std::function<bool()> & stopping, bool take_waiting) {
    if (buffered() > 0) return true;
    const auto deadline = clock::now() + idle;
    for (;;) {
        if (stopping && stopping()) return take_waiting && fill(std::chrono::milliseconds(0)) > 0;
        const auto now = clock::now();
        if (now >= deadline) return false;
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now) + std::chrono::milliseconds(1);
        int r = wait_for(fd_, POLLIN, std::min(left, k_poll_slice));
        if (r < 0) return false;
        if (r > 0) return fill(std::chrono::milliseconds(0)) > 0;
    }
}

void connection_stream::peek_request_line(std::string & method, std::string & target) const {
    std::string_view data(buf_.data() + off_, buffered());
    data = data.substr(0, data.find('\n'));
    auto sp = data.find(' ');
    if (sp == std::string_view::npos) return;
    method = std::string(data.substr(0, sp));
    auto rest = data.substr(sp + 1);
    target = std::string(rest.substr(0, rest.find(' ')));
    target = target.substr(0, target.find('?'));
}

bool connection_stream::write_all(const std::string & data) {
    size_t done = 0;
    while (done < data.size()) {
        ssize_t n = write(data.data() + done, data.size() - done);
        if (n <= 0) return false;
        done += static_cast<size_t>(n);
    }
    return true;
}

void connection_stream::close_gracefully() {
    ::shutdown(fd_, SHUT_WR);
    // What the client still sends is read and dropped for a moment, so that closing with unread
    // bytes (a reset) does not destroy the answer before the client reads it — but at most 1 MiB of
    // it: at loopback speed 200 ms of draining read a whole refused 64 MiB body.
    char sink[16384];
    size_t drained = 0;
    const auto until = clock::now() + std::chrono::milliseconds(200);
    while (clock::now() < until && drained < (size_t{1} << 20) && wait_for(fd_, POLLIN, std::chrono::milliseconds(50)) > 0) {
        const ssize_t n = ::recv(fd_, sink, sizeof sink, 0);
        if (n <= 0) break;
        drained += static_cast<size_t>(n);
    }
    ::close(fd_);
    fd_ = -1;
}

bool connection_stream::is_readable() const { return buffered() > 0; }

bool connection_stream::wait_readable() const { return buffered() > 0 || wait_for(fd_, POLLIN, read_timeout_) > 0; }

bool connection_stream::wait_writable() const { return wait_for(fd_, POLLOUT, write_timeout_) > 0; }

ssize_t connection_stream::read(char * ptr, size_t size) {
    if (buffered() == 0) {
        if (size >= k_read_chunk) {
            // A large read (a body) goes straight into the caller's memory.
            if (wait_for(fd_, POLLIN, read_timeout_) <= 0) {
                error_ = httplib::Error::Timeout;
                return -1;
            }
            for (;;) {
                ssize_t n = ::recv(fd_, ptr, size, 0);
                if (n < 0 && errno == EINTR) continue;
                if (n <= 0) error_ = n == 0 ? httplib::Error::ConnectionClosed : httplib::Error::Read;
                return n;
            }
        }
        ssize_t n = fill(read_timeout_);
        if (n <= 0) {
            error_ = n == 0 ? httplib::Error::ConnectionClosed : httplib::Error::Timeout;
            return n;
        }
    }
    const size_t n = std::min(size, buffered());
    std::memcpy(ptr, buf_.data() + off_, n);
    off_ += n;
    return static_cast<ssize_t>(n);
}

ssize_t connection_stream::write(const char * ptr, size_t size) {
    if (!wait_writable()) return -1;
    for (;;) {
        ssize_t n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        return n;
    }
}

void connection_stream::get_remote_ip_and_port(std::string & ip, int & port) const {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (::getpeername(fd_, reinterpret_cast<sockaddr *>(&addr), &len) == 0) address_of(addr, len, ip, port);
}

void connection_stream::get_local_ip_and_port(std::string & ip, int & port) const {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (::getsockname(fd_, reinterpret_cast<sockaddr *>(&addr), &len) == 0) address_of(addr, len, ip, port);
}

time_t connection_stream::duration() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - opened_).count();
}

void connection_stream::set_read_timeout(time_t sec, time_t usec) {
    read_timeout_ = std::chrono::milliseconds(sec * 1000 + usec / 1000);
}

const char * connection_stream::buffered_data(size_t & size) const {
    size = buffered();
    return size ? buf_.data() + off_ : nullptr;
}

void connection_stream::consume_buffered(size_t size) { off_ += std::min(size, buffered()); }

void client_presence::begin_request(bool http11) {
    std::lock_guard<std::mutex> lock(mu_);
    http11_ = http11;
    responding_ = false;
    closing_ = false;
}

void client_presence::responding(bool close) {
    std::lock_guard<std::mutex> lock(mu_);
    responding_ = true;
    closing_ = closing_ || close;
}

bool client_presence::closing() {
    std::lock_guard<std::mutex> lock(mu_);
    return closing_;
}

bool client_presence::gone() {
    std::lock_guard<std::mutex> lock(mu_);
    if (gone_) return true;
    pollfd p{fd_, static_cast<short>(POLLIN | POLLRDHUP), 0};
    if (::poll(&p, 1, 0) < 0) return false;
    if (p.revents & (POLLERR | POLLHUP | POLLNVAL)) return gone_ = true;  // reset, or closed both ways
    if (!(p.revents & POLLRDHUP)) return false;                          // still sending, or quiet
    // The client has finished sending.
    if (!http11_) return gone_ = true;
    if (probed_ || responding_) return false;  // a write of the response will tell
    probed_ = true;
    static constexpr std::string_view interim = "HTTP/1.1 100 Continue\r\n\r\n";
    if (::send(fd_, interim.data(), interim.size(), MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return gone_ = true;
    // A peer that closed the socket resets the connection: on loopback at once, elsewhere within a
    // round trip (the next check sees it). Asking for no events, poll wakes for that error alone.
    pollfd q{fd_, 0, 0};
    if (::poll(&q, 1, 20) > 0 && (q.revents & (POLLERR | POLLHUP))) return gone_ = true;
    return false;
}

}  // namespace rc::http::detail
