#pragma once
// A stand-in HTTP server on 127.0.0.1 for tests (a fake host, a canned model, a peer's health
// route): register handlers on `http`, then start() it on a free port or a given one; it stops and
// joins its thread when destroyed. cpp-httplib (from the pinned tree) does the serving.
#include <cpp-httplib/httplib.h>

#include <string>
#include <thread>

namespace rc::test {

class loopback_server {
  public:
    loopback_server() = default;
    loopback_server(const loopback_server &) = delete;
    loopback_server & operator=(const loopback_server &) = delete;
    ~loopback_server() { stop(); }

    // Listens on `port` (0: any free one) and serves on a thread of its own; false if it cannot bind.
    bool start(int port = 0) {
        port_ = port == 0 ? http.bind_to_any_port("127.0.0.1") : (http.bind_to_port("127.0.0.1", port) ? port : -1);
        if (port_ <= 0) return false;
        thread_ = std::thread([this] { http.listen_after_bind(); });
        http.wait_until_ready();
        return true;
    }
    void stop() {
        http.stop();
        if (thread_.joinable()) thread_.join();
    }
    int port() const { return port_; }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

    httplib::Server http;

  private:
    int port_ = -1;
    std::thread thread_;
};

}  // namespace rc::test
