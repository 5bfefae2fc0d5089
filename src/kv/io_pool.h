#pragma once
// A small pool of threads for the KV tiers' disk I/O, so the engine thread never blocks on disk
// (ARCHITECTURE.md §1). Jobs run in submission order per thread; stop() drains the queue.
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace rc::kv {

class io_pool {
  public:
    explicit io_pool(int threads);
    ~io_pool();
    void submit(std::function<void()> job);
    size_t pending() const;
    // Blocks until every job submitted so far has run (tests, orderly shutdown).
    void drain();

  private:
    void worker();
    mutable std::mutex mutex_;
    std::condition_variable wake_, idle_;
    std::deque<std::function<void()>> jobs_;
    int running_ = 0;
    bool stopping_ = false;
    std::vector<std::thread> threads_;
};

}  // namespace rc::kv
