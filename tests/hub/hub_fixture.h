#pragma once
// The fake Hub every server test talks to: a few repositories of generated files, one server per test
// process, its faults and statistics reset before each test.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "fake_hub.h"
#include "hub/hub_client.h"

namespace rc::test {

struct fixture_file {
    std::string repo;
    std::string path;
    std::string content;
};

// acme/Tiny-GGUF (Q4_K_M 3 MiB, Q8_0 as a symlink, F16, a projector, README, docs/), acme/Big-GGUF
// (a two-part split Q4_K_M), other/tinyllama-GGUF (Q5_K_M, most downloaded), acme/tiny-docs (no GGUF).
const std::vector<fixture_file> & fixture_files();
const fixture_file & fixture(const std::string & repo, const std::string & path);
// What the Hub lists for a fixture file (size and, for .gguf, the LFS sha256).
hub::repo_file listed(const fixture_file & f);

class hub_server_test : public ::testing::Test {
  protected:
    static void SetUpTestSuite();
    static void TearDownTestSuite();
    void SetUp() override;

    static fake_hub & server() { return *server_; }
    // The configuration of client(): the fake Hub's endpoint, `token`, defaults otherwise.
    hub::hub_config config(const std::string & token = "") const;
    hub::hub_client client(const std::string & token = "") const;
    const std::filesystem::path & scratch() const { return scratch_.path(); }

  private:
    static std::unique_ptr<temp_dir> root_;
    static std::unique_ptr<fake_hub> server_;
    temp_dir scratch_{"work"};
};

}  // namespace rc::test
