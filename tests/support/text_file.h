#pragma once
// A file's whole content as a string ("" when it cannot be read): logs, outputs, records.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace rc::test {

inline std::string slurp(const std::filesystem::path & p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace rc::test
