#pragma once
// A fresh store root per test under the system temp directory, and small file helpers.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "support/temp_dir.h"

namespace rc::store::test {

namespace fs = std::filesystem;

class temp_root_test : public ::testing::Test {
  protected:
    fs::path write_file(const std::string & rel, const std::string & contents) const {
        fs::path p = root / rel;
        fs::create_directories(p.parent_path());
        std::ofstream(p, std::ios::binary) << contents;
        return p;
    }

    // Names in a directory (empty when it does not exist).
    static std::vector<std::string> entries(const fs::path & dir) {
        std::vector<std::string> out;
        std::error_code ec;
        for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) out.push_back(it->path().filename().string());
        std::sort(out.begin(), out.end());
        return out;
    }

    rc::test::temp_dir tmp_{"store"};  // fresh for each test, removed after it
    const fs::path root = tmp_.path();
};

inline std::string read_file(const fs::path & p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace rc::store::test
