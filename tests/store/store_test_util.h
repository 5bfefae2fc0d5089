#pragma once
// A fresh store root per test under the system temp directory, and small file helpers.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace rc::store::test {

namespace fs = std::filesystem;

class temp_root_test : public ::testing::Test {
  protected:
    void SetUp() override {
        const auto * info = ::testing::UnitTest::GetInstance()->current_test_info();
        root = fs::temp_directory_path() /
               ("rc-store-" + std::to_string(::getpid()) + "-" + info->test_suite_name() + "-" + info->name());
        fs::remove_all(root);
        fs::create_directories(root);
    }
    void TearDown() override { fs::remove_all(root); }

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

    fs::path root;
};

inline std::string read_file(const fs::path & p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace rc::store::test
