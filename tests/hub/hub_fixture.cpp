#include "hub_fixture.h"

#include <cstdlib>

namespace rc::test {

namespace fs = std::filesystem;

std::unique_ptr<temp_dir> hub_server_test::root_;
std::unique_ptr<fake_hub> hub_server_test::server_;

const std::vector<fixture_file> & fixture_files() {
    static const std::vector<fixture_file> files = {
        {"acme/Tiny-GGUF", "Tiny-Q4_K_M.gguf", pseudo_random_bytes(3u << 20, 1)},
        {"acme/Tiny-GGUF", "Tiny-Q8_0.gguf", pseudo_random_bytes(1536u << 10, 2)},
        {"acme/Tiny-GGUF", "Tiny-F16.gguf", pseudo_random_bytes(256u << 10, 3)},
        {"acme/Tiny-GGUF", "mmproj-Tiny-F16.gguf", pseudo_random_bytes(64u << 10, 4)},
        {"acme/Tiny-GGUF", "README.md", "# Tiny\nA generated test repository.\n"},
        {"acme/Tiny-GGUF", "docs/notes.txt", "notes\n"},
        {"acme/Big-GGUF", "Big-Q4_K_M-00001-of-00002.gguf", pseudo_random_bytes(512u << 10, 5)},
        {"acme/Big-GGUF", "Big-Q4_K_M-00002-of-00002.gguf", pseudo_random_bytes(300u << 10, 6)},
        {"other/tinyllama-GGUF", "tinyllama.Q5_K_M.gguf", pseudo_random_bytes(128u << 10, 7)},
        {"acme/tiny-docs", "README.md", "# Docs only\n"},
    };
    return files;
}

const fixture_file & fixture(const std::string & repo, const std::string & path) {
    for (const auto & f : fixture_files())
        if (f.repo == repo && f.path == path) return f;
    throw std::logic_error("no fixture " + repo + "/" + path);
}

hub::repo_file listed(const fixture_file & f) {
    bool lfs = f.path.ends_with(".gguf");
    return hub::repo_file{f.path, f.content.size(), lfs ? sha256_hex(f.content) : ""};
}

void hub_server_test::SetUpTestSuite() {
    if (server_ || !fake_hub::node_available()) return;
    // A developer's proxy must not intercept requests to the loopback server.
    setenv("no_proxy", "127.0.0.1,localhost", 1);
    setenv("NO_PROXY", "127.0.0.1,localhost", 1);
    root_ = std::make_unique<temp_dir>("root");
    const fs::path & root = root_->path();
    for (const auto & f : fixture_files()) {
        if (f.path == "Tiny-Q8_0.gguf") {
            // Served through a symlink, as a store of shared blobs would be; '.' dirs are not served.
            write_file(root / ".blobs" / "q8", f.content);
            fs::create_directories(root / f.repo);
            fs::create_symlink(root / ".blobs" / "q8", root / f.repo / f.path);
        } else {
            write_file(root / f.repo / f.path, f.content);
        }
    }
    write_file(root / "acme/Tiny-GGUF/.hub.json", R"({"downloads": 1000, "likes": 10})");
    write_file(root / "acme/Big-GGUF/.hub.json", R"({"downloads": 50, "likes": 1})");
    write_file(root / "other/tinyllama-GGUF/.hub.json", R"({"downloads": 5000, "likes": 99})");
    write_file(root / "acme/tiny-docs/.hub.json", R"({"downloads": 99999})");
    server_ = std::make_unique<fake_hub>(root);
}

void hub_server_test::TearDownTestSuite() {
    server_.reset();
    root_.reset();
}

void hub_server_test::SetUp() {
    if (!fake_hub::node_available()) GTEST_SKIP() << "node not found at configure time (" << RC_NODE << ")";
    ASSERT_TRUE(server_ && server_->started()) << "the fake Hub server did not start";
    server_->control({{"reset", true}});
    server_->reset_stats();
}

hub::hub_config hub_server_test::config(const std::string & token) const {
    hub::hub_config cfg;
    cfg.endpoint = server_->endpoint();
    cfg.token = token;
    return cfg;
}

hub::hub_client hub_server_test::client(const std::string & token) const { return hub::hub_client(config(token)); }

}  // namespace rc::test
