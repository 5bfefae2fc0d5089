#pragma once
// The threads that serve connections (internal to src/api; http_server.cpp installs it as httplib's
// task queue). Every open connection holds a thread while it is open — slow clients and idle
// keep-alive ones too — so a new connection must find a thread at once: one is started whenever
// the connections waiting outnumber the idle threads, up to `max_threads`. (httplib's own pool
// starts one only when no thread is idle, and a thread that was woken but has not yet taken its
// job still counts as idle: with 65 slow connections on its 64 base threads, a fresh client waited
// about 7 s, until a header deadline freed one.) Threads above `keep_idle` end after a minute idle.
#include <cpp-httplib/httplib.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <thread>
#include <vector>

namespace rc::http::detail {

class connection_pool final : public httplib::TaskQueue {
  public:
    connection_pool(size_t keep_idle, size_t max_threads);
    ~connection_pool() override;

    // False when shutting down, or when every thread is busy and 4 x max_threads connections
    // already wait for one (the connection is then dropped by httplib; http_server keeps max_threads above
    // its connection cap and answers the connections over it at once, so that takes a flood).
    bool enqueue(std::function<void()> fn) override;
    // Runs what is queued, then joins every thread.
    void shutdown() override;

  private:
    void work();
    void join_finished();  // with mu_ held

    const size_t keep_idle_, max_threads_;
    std::mutex mu_;
    std::condition_variable wake_;
    std::deque<std::function<void()>> jobs_;
    std::list<std::thread> threads_;
    std::vector<std::thread::id> finished_;
    size_t idle_ = 0;
    bool stopping_ = false;
};

}  // namespace rc::http::detail
