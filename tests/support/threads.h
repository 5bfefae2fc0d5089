#pragma once
// How many threads this process has now (Linux: the entries of /proc/self/task), and how many of
// them run at a given nice value.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace rc::test {

inline int process_threads() {
    int n = 0;
    for ([[maybe_unused]] const auto & entry : std::filesystem::directory_iterator("/proc/self/task")) ++n;
    return n;
}

inline int threads_at_nice(int nice) {
    int n = 0;
    for (const auto & entry : std::filesystem::directory_iterator("/proc/self/task")) {
        std::ifstream f(entry.path() / "stat");
        std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        const auto close = stat.rfind(')');  // the name may hold spaces and parentheses
        if (close == std::string::npos) continue;
        std::istringstream fields(stat.substr(close + 2));
        std::string field;
        for (int i = 3; i <= 19 && fields >> field; ++i) {
            if (i == 19 && std::stoi(field) == nice) ++n;  // field 19 of proc(5): nice
        }
    }
    return n;
}

}  // namespace rc::test
