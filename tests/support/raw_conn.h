#pragma once
// A plain TCP connection to 127.0.0.1:port, for tests where a client library would hide what the
// server does with the bytes: framing, half-closes, slow clients.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <functional>
#include <string>

namespace rc::test {

// A plain TCP connection to 127.0.0.1:port.
class raw_conn {
  public:
    explicit raw_conn(int port) {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(static_cast<uint16_t>(port));
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::connect(fd_, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0) {
            ::close(fd_);
            fd_ = -1;
        }
    }
    ~raw_conn() {
        if (fd_ >= 0) ::close(fd_);
    }
    raw_conn(const raw_conn &) = delete;
    raw_conn & operator=(const raw_conn &) = delete;

    bool ok() const { return fd_ >= 0; }
    bool send(const std::string & s) { return ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL) == ssize_t(s.size()); }
    // Sends as much of `s` as the server takes within `limit`: the bytes sent (fewer when it closed
    // the connection or stopped reading).
    size_t send_within(const std::string & s, std::chrono::milliseconds limit) {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        size_t sent = 0;
        while (sent < s.size() && std::chrono::steady_clock::now() < deadline) {
            pollfd p{fd_, POLLOUT, 0};
            if (::poll(&p, 1, 50) <= 0) continue;
            if (p.revents & (POLLERR | POLLHUP)) break;
            ssize_t n = ::send(fd_, s.data() + sent, s.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) continue;
            if (n <= 0) break;
            sent += size_t(n);
        }
        return sent;
    }
    // Reads until `done(received)` holds, the peer closes, or `limit` passes; returns what came.
    std::string read_until(const std::function<bool(const std::string &)> & done, std::chrono::milliseconds limit) {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (!done(in_)) {
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
            if (left <= 0) break;
            pollfd p{fd_, POLLIN, 0};
            if (::poll(&p, 1, int(left)) <= 0) continue;
            char buf[8192];
            ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
            if (n <= 0) {
                closed_ = true;
                break;
            }
            in_.append(buf, size_t(n));
        }
        return in_;
    }
    bool closed() const { return closed_; }
    // Half-closes: the server reads the end of the stream and may still answer.
    void shut_write() { ::shutdown(fd_, SHUT_WR); }

  private:
    int fd_ = -1;
    std::string in_;
    bool closed_ = false;
};

}  // namespace rc::test
