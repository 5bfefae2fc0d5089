#pragma once
// The one poll helper: tests wait for a condition, never for a fixed time.
#include <unistd.h>

#include <chrono>

namespace rc::test {

// Polls `pred` until it holds (true) or `timeout` passes (false, after one last try). The pause
// between tries starts at 1 ms and doubles up to 20 ms: a state that comes quickly is seen quickly,
// and a slow one (an etcd read, an HTTP call in `pred`) is not hammered.
template <typename F>
bool poll_until(F pred, std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    useconds_t pause = 1000;
    while (std::chrono::steady_clock::now() < until) {
        if (pred()) return true;
        usleep(pause);
        pause = pause < 10000 ? pause * 2 : 20000;
    }
    return pred();
}

}  // namespace rc::test
