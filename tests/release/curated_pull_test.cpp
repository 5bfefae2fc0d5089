// `rustycage pull --curated` end to end: the real binary against the fake Hub (tests/fixtures/fake_hub)
// with a test catalog. The models are the generated test GGUFs (real files: the pull verifies them
// against the listing's SHA-256 and runs the quarantine load); the "big" entry is a sparse file the
// Hub lists at its full size and that must never be downloaded.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "hub/fake_hub.h"
#include "support/run_command.h"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using rc::test::fake_hub;
using rc::test::run_command;

std::string test_model(const std::string & preset) { return std::string(RC_TEST_MODELS_DIR) + "/" + preset + ".gguf"; }
bool contains(const std::string & text, const std::string & part) { return text.find(part) != std::string::npos; }

constexpr uint64_t k_big_size = 512ull << 20;  // listed, never served

class curated_pull : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!fake_hub::node_available()) GTEST_SKIP() << "node not found: the fake Hub cannot run";
        tmp_ = std::make_unique<rc::test::temp_dir>("rc-curated");
        const fs::path hub_root = tmp_->path() / "hub";
        fs::create_directories(hub_root / "test" / "Big-Chat-GGUF");
        fs::create_directories(hub_root / "test" / "Small-Chat-GGUF");
        fs::create_directories(hub_root / "test" / "Embed-GGUF");
        {
            std::ofstream big(hub_root / "test" / "Big-Chat-GGUF" / "big-chat-Q4_K_M.gguf", std::ios::binary);
        }
        fs::resize_file(hub_root / "test" / "Big-Chat-GGUF" / "big-chat-Q4_K_M.gguf", k_big_size);  // sparse
        fs::create_symlink(test_model("tiny-chat-q8"), hub_root / "test" / "Small-Chat-GGUF" / "small-chat-Q8_0.gguf");
        fs::create_symlink(test_model("tiny-embed"), hub_root / "test" / "Embed-GGUF" / "embed-F16.gguf");
        hub_ = std::make_unique<fake_hub>(hub_root);
        ASSERT_TRUE(hub_->started());

        catalog_ = tmp_->path() / "curated.json";
        write_catalog(R"({"schema": 1, "models": [
          {"name": "big-chat", "repo": "test/Big-Chat-GGUF", "quantization": "Q4_K_M", "uses": ["chat", "triage"]},
          {"name": "small-chat", "repo": "test/Small-Chat-GGUF", "quantization": "Q8_0", "file": "small-chat-Q8_0.gguf", "uses": ["chat"]},
          {"name": "embed", "repo": "test/Embed-GGUF", "quantization": "F16", "uses": ["embedding"]},
          {"name": "gone", "repo": "test/Not-There-GGUF", "quantization": "Q4_K_M", "uses": ["code"]}]})");
        models_ = tmp_->path() / "models";
    }

    void write_catalog(const std::string & text) { std::ofstream(catalog_) << text; }

    rc::test::command_result pull(std::vector<std::string> extra) {
        std::vector<std::string> args = {RC_RUSTYCAGE_BIN, "pull", "--models-dir", models_.string()};
        args.insert(args.end(), extra.begin(), extra.end());
        return run_command(args, {{"HF_ENDPOINT", hub_->endpoint()}, {"RUSTYCAGE_CURATED_CATALOG", catalog_.string()}});
    }

    json list() {
        auto r = run_command({RC_RUSTYCAGE_BIN, "list", "--json", "--models-dir", models_.string()});
        EXPECT_EQ(r.code, 0) << r.err;
        return json::parse(r.out, nullptr, false);
    }

    bool downloaded(const std::string & file) {
        const json stats = hub_->stats();  // iterated below: must outlive the loop
        for (const auto & req : stats["requests"])
            if (contains(req.value("path", ""), "/resolve/") && contains(req.value("path", ""), file) && req.value("method", "") == "GET") return true;
        return false;
    }

    // "NAME  …  PULL" rows of the plan table, keyed by name: the FITS and PULL columns.
    static std::string row(const std::string & out, const std::string & name) {
        size_t at = out.find("\n" + name + " ");
        if (at == std::string::npos) return "";
        return out.substr(at + 1, out.find('\n', at + 1) - at - 1);
    }

    std::unique_ptr<rc::test::temp_dir> tmp_;
    std::unique_ptr<fake_hub> hub_;
    fs::path catalog_, models_;
};

TEST_F(curated_pull, the_plan_sizes_entries_from_the_hub_and_fits_them_to_the_memory) {
    const uint64_t small = fs::file_size(test_model("tiny-chat-q8"));
    // Room for the small chat model (and the embedding model), not for the 512 MiB one.
    const std::string memory = std::to_string((small + small / 4) + (1 << 20));
    auto r = pull({"--curated", "--fit", "auto", "--memory", memory, "--dry-run"});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_TRUE(contains(row(r.out, "big-chat"), "512.0 MiB")) << r.out;  // the Hub's size, not the catalog's
    EXPECT_TRUE(contains(row(r.out, "big-chat"), " no")) << r.out;
    EXPECT_TRUE(row(r.out, "small-chat").ends_with("yes")) << r.out;
    EXPECT_TRUE(row(r.out, "embed").ends_with("yes")) << r.out;
    EXPECT_TRUE(contains(row(r.out, "gone"), "?")) << r.out;
    EXPECT_TRUE(contains(r.err, "warning: gone:")) << r.err;                 // not on the Hub
    EXPECT_TRUE(contains(r.err, "no curated triage model fits")) << r.err;  // only big-chat does triage
    EXPECT_TRUE(contains(r.err, "no curated code model fits")) << r.err;
    EXPECT_FALSE(downloaded(".gguf")) << "a dry run downloads nothing";
    EXPECT_FALSE(fs::exists(models_ / "manifests"));

    // With more memory the first chat model in the catalog wins.
    auto roomy = pull({"--curated", "--memory", "4GiB", "--dry-run", "--use", "chat"});
    ASSERT_EQ(roomy.code, 0) << roomy.err;
    EXPECT_TRUE(row(roomy.out, "big-chat").ends_with("yes")) << roomy.out;
    EXPECT_FALSE(row(roomy.out, "small-chat").ends_with("yes")) << roomy.out;
    EXPECT_TRUE(row(roomy.out, "embed").empty()) << "--use chat leaves the embedding model out\n" << roomy.out;
}

TEST_F(curated_pull, fit_auto_pulls_what_fits_and_verifies_it) {
    const uint64_t small = fs::file_size(test_model("tiny-chat-q8"));
    auto r = pull({"--curated", "--fit", "auto", "--use", "chat,triage", "--memory", std::to_string(2 * small)});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_TRUE(contains(r.out, "pulling small-chat (hf.co/test/Small-Chat-GGUF:Q8_0)")) << r.out;
    EXPECT_TRUE(contains(r.err, "verifying sha256 digest")) << r.err;
    EXPECT_FALSE(downloaded("big-chat-Q4_K_M.gguf")) << "the model that does not fit is never fetched";
    EXPECT_FALSE(downloaded("embed-F16.gguf")) << "--use chat,triage";
    const json l = list();
    ASSERT_TRUE(l.is_array()) << l.dump();
    ASSERT_EQ(l.size(), 1u) << l.dump();
    EXPECT_EQ(l[0]["name"], "hf.co/test/Small-Chat-GGUF:Q8_0");
    EXPECT_EQ(l[0]["status"], "ready");
    EXPECT_EQ(l[0]["size"], small);

    // Again: already there, nothing downloaded twice.
    hub_->reset_stats();
    auto again = pull({"--curated", "--use", "chat", "--memory", std::to_string(2 * small)});
    ASSERT_EQ(again.code, 0) << again.err;
    EXPECT_FALSE(downloaded(".gguf"));
}

TEST_F(curated_pull, a_download_that_does_not_match_the_hubs_sha256_is_refused) {
    hub_->control({{"corrupt", "test/Small-Chat-GGUF/small-chat-Q8_0.gguf"}});
    auto r = pull({"--curated", "--use", "chat", "--memory", "100MiB"});
    EXPECT_EQ(r.code, 1) << r.out << r.err;
    EXPECT_TRUE(contains(r.err, "sha256")) << r.err;
    const json l = list();
    EXPECT_TRUE(l.is_array() && l.empty()) << l.dump();
}

TEST_F(curated_pull, fit_name_pulls_that_entry_and_warns_when_it_will_not_fit) {
    auto r = pull({"--curated", "--fit", "big-chat", "--memory", "64MiB", "--dry-run"});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(row(r.out, "big-chat").ends_with("yes")) << r.out;
    EXPECT_TRUE(row(r.out, "small-chat").empty()) << r.out;
    EXPECT_TRUE(contains(r.err, "may not load on this host")) << r.err;
}

TEST_F(curated_pull, bad_requests_fail_clearly_and_change_nothing) {
    auto unknown = pull({"--curated", "--fit", "no-such-model", "--memory", "1GiB"});
    EXPECT_EQ(unknown.code, 1);
    EXPECT_TRUE(contains(unknown.err, "'no-such-model' is neither auto nor a model")) << unknown.err;

    auto bad_use = pull({"--curated", "--use", "dance", "--memory", "1GiB"});
    EXPECT_EQ(bad_use.code, 1);
    EXPECT_TRUE(contains(bad_use.err, "unknown use 'dance'")) << bad_use.err;

    auto bad_memory = pull({"--curated", "--memory", "lots"});
    EXPECT_EQ(bad_memory.code, 1);
    EXPECT_TRUE(contains(bad_memory.err, "--memory")) << bad_memory.err;

    auto tiny = pull({"--curated", "--memory", "1KiB"});
    EXPECT_EQ(tiny.code, 1);
    EXPECT_TRUE(contains(tiny.err, "nothing in the curated set fits")) << tiny.err;

    auto neither = pull({});
    EXPECT_NE(neither.code, 0);
    EXPECT_TRUE(contains(neither.err, "give a model NAME or --curated")) << neither.err;
    auto both = pull({"hf.co/test/Small-Chat-GGUF:Q8_0", "--curated"});
    EXPECT_NE(both.code, 0);

    write_catalog(R"({"schema": 1, "models": [{"name": "x", "repo": "a/b", "quantization": "Q4_K_M", "uses": ["dance"]}]})");
    auto bad_catalog = pull({"--curated", "--memory", "1GiB"});
    EXPECT_EQ(bad_catalog.code, 1);
    EXPECT_TRUE(contains(bad_catalog.err, "unknown use")) << bad_catalog.err;
    EXPECT_TRUE(contains(bad_catalog.err, catalog_.string())) << bad_catalog.err;

    EXPECT_FALSE(downloaded(".gguf"));
    EXPECT_FALSE(fs::exists(models_ / "manifests"));
}

}  // namespace
