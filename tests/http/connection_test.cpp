// One connection as the server reads it, on a socket pair: what a shutdown does to a request that
// was sent but not read yet, and to a connection with nothing on it.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "http/http_connection.h"

namespace rc::http::detail {
namespace {

using namespace std::chrono_literals;

struct socket_pair {
    int client = -1, server = -1;
    socket_pair() {
        int fds[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0) {
            client = fds[0];
            server = fds[1];
        }
    }
    ~socket_pair() {
        if (client >= 0) ::close(client);
        if (server >= 0) ::close(server);  // connection_stream does not own it until close_gracefully
    }
};

const auto stopped = [] { return true; };

TEST(connection_stream, a_request_sent_before_a_shutdown_is_read_and_an_idle_connection_is_closed) {
    socket_pair p;
    ASSERT_GE(p.client, 0);
    connection_stream idle(p.server, 1s, 1s);
    EXPECT_FALSE(idle.wait_for_request(5s, stopped, true)) << "nothing sent: closed at once";

    const std::string request = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
    ASSERT_EQ(::write(p.client, request.data(), request.size()), static_cast<ssize_t>(request.size()));
    connection_stream waiting(p.server, 1s, 1s);
    EXPECT_FALSE(waiting.wait_for_request(5s, stopped, false)) << "a keep-alive connection's next request is not waited for";
    EXPECT_TRUE(waiting.wait_for_request(5s, stopped, true)) << "the first request, already sent, is answered";
    EXPECT_EQ(waiting.read_header(connection_stream::clock::now() + 1s, 8192, stopped), connection_stream::header_state::complete);
    std::string method, target;
    waiting.peek_request_line(method, target);
    EXPECT_EQ(method, "GET");
    EXPECT_EQ(target, "/health");
}

}  // namespace
}  // namespace rc::http::detail
