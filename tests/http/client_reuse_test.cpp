// The HTTP client's kept connections (http_client.h `reuse_connection`): round three found the
// gateway opening a TCP connection per forwarded chat (880 chats, 880 connections), most of what it
// added per request. Calls that ask to reuse one do, from any thread; the others do not.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "http/http_client.h"
#include "support/loopback_server.h"

namespace {

// A stand-in host that notes the client port of every request: one port, one connection.
struct port_recorder {
    port_recorder() {
        server.http.Post("/echo", [this](const httplib::Request & req, httplib::Response & res) {
            {
                std::lock_guard lock(mu);
                ports.insert(req.remote_port);
            }
            res.set_content(req.body, "text/plain");
        });
        EXPECT_TRUE(server.start());
        port = server.port();
    }
    size_t connections() {
        std::lock_guard lock(mu);
        return ports.size();
    }
    std::mutex mu;
    std::set<int> ports;
    int port = 0;
    rc::test::loopback_server server;  // after what its handler uses: stopped before they go
};

rc::http::client_request echo(int port, bool reuse, const std::string & body) {
    rc::http::client_request r;
    r.method = "POST";
    r.url = "http://127.0.0.1:" + std::to_string(port) + "/echo";
    r.headers = {"Content-Type: text/plain", "Expect:"};
    r.body = body;
    r.reuse_connection = reuse;
    return r;
}

}  // namespace

TEST(http_client, calls_that_reuse_a_connection_do_and_others_open_their_own) {
    port_recorder fresh;
    for (int i = 0; i < 10; ++i) {
        auto r = rc::http::call(echo(fresh.port, false, "x" + std::to_string(i)));
        ASSERT_TRUE(r.ok() && r->ok());
    }
    EXPECT_EQ(fresh.connections(), 10u) << "a connection per call by default";

    port_recorder kept;
    for (int i = 0; i < 10; ++i) {
        auto r = rc::http::call(echo(kept.port, true, "y" + std::to_string(i)));
        ASSERT_TRUE(r.ok() && r->ok());
        EXPECT_EQ(r->body, "y" + std::to_string(i));
    }
    EXPECT_EQ(kept.connections(), 1u) << "one kept connection for ten calls in a row";

    // From four threads at once: every call answered right, at most a connection per thread.
    std::atomic<int> good{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < 25; ++i) {
                const std::string body = std::to_string(t) + "/" + std::to_string(i);
                auto r = rc::http::call(echo(kept.port, true, body));
                good += r.ok() && r->ok() && r->body == body ? 1 : 0;
            }
        });
    for (auto & th : threads) th.join();
    EXPECT_EQ(good.load(), 100);
    EXPECT_LE(kept.connections(), 5u) << "connections are kept and shared, not opened per call";
}
