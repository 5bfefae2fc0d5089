// Raw bytes on a socket of our HTTP server (http::http_server: httplib's parser, our connection
// loop, pool and framing checks), as any client on the network can send them. Input: the bytes a
// client writes before it half-closes. The server has a plain GET route, a POST route that reads
// its body and a streamed one. Invariants beyond "no crash": what comes back is HTTP/1.1
// responses; nothing follows a 400 (a framing error closes the connection: bytes after it must
// never run as a request); and every 32 inputs a fresh well-formed request still gets its 200.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>

#include "http/http_server.h"

namespace {

struct server {
    std::unique_ptr<rc::http::http_server> http;
    std::thread thread;
    int port = 0;

    server() {
        std::vector<rc::http::route> routes = {
            {"GET", "/ok", [](const rc::http::http_request &) { return rc::http::http_response{200, "text/plain", "ok", {}, nullptr}; }},
            {"POST", "/echo", [](const rc::http::http_request & r) {
                 return rc::http::http_response{200, "text/plain", std::to_string(r.body.size()), {}, nullptr};
             }},
            {"GET", "/stream", [](const rc::http::http_request &) {
                 rc::http::http_response r;
                 r.content_type = "text/event-stream";
                 r.stream = [](rc::http::stream_sink & s) { s.write("data: 1\n\n") && s.write("data: [DONE]\n\n"); };
                 return r;
             }},
        };
        rc::http::http_server_options o;
        o.max_body_bytes = 1u << 16;
        o.max_connections = 8;
        o.header_timeout = std::chrono::milliseconds(300);
        o.keep_alive_idle = std::chrono::milliseconds(100);
        o.read_timeout = std::chrono::milliseconds(300);
        o.write_timeout = std::chrono::milliseconds(1000);
        o.on_status = [](const rc::http::http_request &, int status) { return rc::http::http_response{status, "text/plain", "refused", {}, nullptr}; };
        o.on_exception = [](const rc::http::http_request &, std::exception_ptr) { return rc::http::http_response{500, "text/plain", "error", {}, nullptr}; };
        http = std::make_unique<rc::http::http_server>(std::move(routes), o);
        auto bound = http->bind("127.0.0.1", 0);
        if (!bound) std::abort();
        port = bound.value();
        thread = std::thread([this] { http->serve(); });
        http->wait_until_serving();
    }
    ~server() {
        http->stop();
        if (thread.joinable()) thread.join();
    }
};

// A connection to the server. Tens of thousands of connections a minute can run the loopback out
// of free ports for a moment (the server's closed ones wait in TIME_WAIT): that is retried; a
// refused connection means the server stopped accepting, a finding.
int connect_to(int port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (int attempt = 0; attempt < 500; ++attempt) {
        int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0) std::abort();
        if (::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0) return fd;
        const int err = errno;
        ::close(fd);
        if (err == ECONNREFUSED) __builtin_trap();
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::abort();  // no connection for 5 s
}

// Sends `bytes`, half-closes, and returns all the server writes until it closes (at most 3 s).
std::string exchange(int port, std::string_view bytes) {
    const int fd = connect_to(port);
    size_t sent = 0;
    while (sent < bytes.size()) {
        ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) break;  // the server closed early (a refused framing): fine
        sent += static_cast<size_t>(n);
    }
    ::shutdown(fd, SHUT_WR);
    std::string out;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    char buf[4096];
    while (std::chrono::steady_clock::now() < until) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) continue;
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        out.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    static server s;
    static unsigned runs = 0;
    const std::string out = exchange(s.port, std::string_view(reinterpret_cast<const char *>(data), size));
    if (!out.empty() && out.rfind("HTTP/1.1 ", 0) != 0) __builtin_trap();
    if (auto bad = out.find("HTTP/1.1 400 "); bad != std::string::npos && out.find("HTTP/1.1 ", bad + 1) != std::string::npos) __builtin_trap();
    if (++runs % 32 == 0 && exchange(s.port, "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n").rfind("HTTP/1.1 200 ", 0) != 0) __builtin_trap();
    return 0;
}
