#include "kv/io_pool.h"

namespace rc::kv {

io_pool::io_pool(int threads) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { worker(); });
}

io_pool::~io_pool() {
    drain();
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    for (auto & t : threads_) t.join();
}

void io_pool::submit(std::function<void()> job) {
    {
        std::lock_guard lock(mutex_);
        jobs_.push_back(std::move(job));
    }
    wake_.notify_one();
}

size_t io_pool::pending() const {
    std::lock_guard lock(mutex_);
    return jobs_.size() + static_cast<size_t>(running_);
}

void io_pool::drain() {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [&] { return jobs_.empty() && running_ == 0; });
}

void io_pool::worker() {
    for (;;) {
        std::function<void()> job;
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
            if (jobs_.empty()) return;
            job = std::move(jobs_.front());
            jobs_.pop_front();
            ++running_;
        }
        job();
        {
            std::lock_guard lock(mutex_);
            --running_;
        }
        idle_.notify_all();
    }
}

}  // namespace rc::kv
