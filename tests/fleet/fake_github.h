#pragma once
// A fake GitHub REST API (issues and comments) on a loopback port, in the test process, with fault
// injection: a number of 500s, a time window of 500s, 429 / 403 rate limits with Retry-After or
// X-RateLimit-Reset, slow answers, and "create, then fail" (the crash window: the issue exists but
// the caller hears an error). Every request is recorded so tests assert the exact calls made.
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace httplib {
class Server;
}

namespace rc::test {

struct gh_call {
    std::string method, path;  // path without the query
    std::string query;
    std::string auth;          // the Authorization header as received
    int status = 0;
    std::chrono::steady_clock::time_point at;
};

struct gh_issue {
    int64_t number = 0;
    std::string title, body, state = "open";
    std::vector<std::string> labels;
    std::vector<std::string> comments;
};

class fake_github {
  public:
    fake_github();
    ~fake_github();
    fake_github(const fake_github &) = delete;
    fake_github & operator=(const fake_github &) = delete;

    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

    // Faults (each applies to the next requests of any kind, in this order of precedence).
    void fail_next(int n, int status = 500);                                   // answer `status` n times
    void fail_for(std::chrono::milliseconds d, int status = 500);              // answer `status` until d has passed
    void rate_limit_next(int n, int retry_after_s, bool as_403 = false);       // 429 (or 403) with Retry-After
    void rate_limit_reset_next(int n, int64_t reset_epoch_s);                  // 403 + X-RateLimit-Remaining: 0 + Reset
    void delay_writes(std::chrono::milliseconds d);                            // POSTs are applied, then answered after d
    void create_then_fail_next(int n);                                         // POST creates, then answers 502

    std::vector<gh_call> calls() const;
    std::vector<gh_call> calls(const std::string & method, const std::string & path_suffix) const;
    std::vector<gh_issue> issues() const;
    void close_issue(int64_t number);
    void reset();

  private:
    void handle(const std::string & method, const void * req, void * res);

    std::unique_ptr<httplib::Server> server_;
    std::thread thread_;
    int port_ = 0;
    mutable std::mutex mu_;
    std::vector<gh_call> calls_;
    std::map<int64_t, gh_issue> issues_;
    int64_t next_number_ = 1;
    int fail_n_ = 0, fail_status_ = 500;
    std::chrono::steady_clock::time_point fail_until_{};
    int fail_until_status_ = 500;
    int limit_n_ = 0, limit_retry_ = 0;
    bool limit_403_ = false;
    int reset_n_ = 0;
    int64_t reset_epoch_ = 0;
    std::chrono::milliseconds write_delay_{0};
    int create_fail_n_ = 0;
};

}  // namespace rc::test
