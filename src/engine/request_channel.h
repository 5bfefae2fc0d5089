#pragma once
// The link between one request's producer (the engine thread) and its consumer (an HTTP thread).
// Events are queued without blocking the engine; `cancel()` may be called from any thread and the
// engine frees the sequence at its next step.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>

#include "engine/request.h"

namespace rc::engine {

class request_channel {
  public:
    void push(generation_event ev) {
        {
            std::lock_guard lock(mutex_);
            if (ev.kind != generation_event::type::text) finished_ = true;
            events_.push_back(std::move(ev));
        }
        cv_.notify_one();
    }

    // Waits up to `timeout` for the next event; nullopt on timeout (poll the client, then call again).
    std::optional<generation_event> pop(std::chrono::milliseconds timeout) {
        std::unique_lock lock(mutex_);
        if (!cv_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return std::nullopt;
        generation_event ev = std::move(events_.front());
        events_.pop_front();
        return ev;
    }

    void cancel() { cancelled_.store(true, std::memory_order_relaxed); }
    bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }

    // True once a terminal event (done / error / embedding) has been queued.
    bool finished() const {
        std::lock_guard lock(mutex_);
        return finished_;
    }

  private:
    mutable std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<generation_event> events_;
    std::atomic<bool> cancelled_{false};
    bool finished_ = false;
};

}  // namespace rc::engine
