#pragma once
// How many threads this process has now (Linux: the entries of /proc/self/task).
#include <filesystem>

namespace rc::test {

inline int process_threads() {
    int n = 0;
    for ([[maybe_unused]] const auto & entry : std::filesystem::directory_iterator("/proc/self/task")) ++n;
    return n;
}

}  // namespace rc::test
