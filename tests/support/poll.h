#pragma once
// The one poll helper: tests wait for a condition, never for a fixed time.
#include <unistd.h>

#include <chrono>

namespace rc::test {

// Polls `pred` every 10 ms until it holds (true) or `timeout` passes (false, after one last try).
template <typename F>
bool poll_until(F pred, std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
    auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
        if (pred()) return true;
        usleep(10000);
    }
    return pred();
}

}  // namespace rc::test
