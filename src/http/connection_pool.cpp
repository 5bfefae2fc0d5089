#include "http/connection_pool.h"

#include <algorithm>
#include <chrono>

namespace rc::http::detail {

namespace {
constexpr std::chrono::seconds k_idle_end{60};
}

connection_pool::connection_pool(size_t keep_idle, size_t max_threads) : keep_idle_(keep_idle), max_threads_(std::max<size_t>(1, max_threads)) {}

connection_pool::~connection_pool() { shutdown(); }

bool connection_pool::enqueue(std::function<void()> fn) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) return false;
        join_finished();
        // Threads that are idle now will each take one queued job; start one for every job beyond them.
        // At the most threads, a connection waits in the queue (up to 4 x max_threads) for the
        // next thread to finish: over the connection cap that is a refusal of microseconds, so
        // every client of a burst hears its 503 instead of a socket closed unanswered.
        if (jobs_.size() + 1 > idle_) {
            if (threads_.size() < max_threads_) threads_.emplace_back([this] { work(); });
            else if (jobs_.size() >= 4 * max_threads_) return false;
        }
        jobs_.push_back(std::move(fn));
    }
    wake_.notify_one();
    return true;
}

void connection_pool::work() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
        ++idle_;
        const bool woken = wake_.wait_for(lock, k_idle_end, [this] { return !jobs_.empty() || stopping_; });
        --idle_;
        if (jobs_.empty() && (stopping_ || (!woken && threads_.size() - finished_.size() > keep_idle_))) break;
        if (jobs_.empty()) continue;
        auto job = std::move(jobs_.front());
        jobs_.pop_front();
        lock.unlock();
        job();
        job = nullptr;  // what the job captured goes before the lock is taken again
        lock.lock();
    }
    finished_.push_back(std::this_thread::get_id());
}

void connection_pool::join_finished() {
    for (auto id : finished_) {
        auto it = std::find_if(threads_.begin(), threads_.end(), [id](const std::thread & t) { return t.get_id() == id; });
        if (it == threads_.end()) continue;
        it->join();  // it has left work() (only the return is left), so this does not wait long
        threads_.erase(it);
    }
    finished_.clear();
}

void connection_pool::shutdown() {
    std::list<std::thread> all;
    {
        std::lock_guard<std::mutex> lock(mu_);
        stopping_ = true;
        all.swap(threads_);
        finished_.clear();
    }
    wake_.notify_all();
    for (auto & t : all) {
        if (t.joinable()) t.join();
    }
}

}  // namespace rc::http::detail
