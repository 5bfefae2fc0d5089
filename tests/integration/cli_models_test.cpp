// The model commands of the real `rustycage` binary (pull, list, show, rm, cp, create, search, ps),
// each run as a process against a temporary models directory and, for the Hub, the fake Hugging
// Face server (tests/fixtures/fake_hub) serving the generated test models.
//
// Paths come from compile definitions when the build gives them (RC_RUSTYCAGE_BIN, RC_NODE,
// RC_FAKE_HUB_DIR), else: rustycage next to this test binary (both land in the build's bin/), node
// from PATH, the fake Hub next to this source file.
#include <cpp-httplib/httplib.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

extern char ** environ;

namespace fs = std::filesystem;
using json = nlohmann::json;

#include "child_process.h"
#include "hub/fake_hub.h"
#include "support/port.h"
#include "support/server_process.h"
#include "support/temp_dir.h"

namespace {

fs::path fake_hub_dir() { return RC_FAKE_HUB_DIR; }  // from CMake (tests/integration/CMakeLists.txt)

std::string model_file(const std::string & preset) { return std::string(RC_TEST_MODELS_DIR) + "/" + preset + ".gguf"; }

using rc::test::child_process;
using rc::test::cli_result;

using rc::test::free_port;
using rc::test::fake_hub;  // tests/hub/fake_hub.h: the fake Hub server, shared with the hub tests

const std::string k_repo = "owner/tiny-GGUF";
const std::string k_q8_name = "hf.co/owner/tiny-GGUF:Q8_0";

class cli_models : public ::testing::Test {
  protected:
    void SetUp() override {
        root_ = tmp_.path();
        models_ = root_ / "models";
        ASSERT_TRUE(fs::exists(std::string(RC_RUSTYCAGE_BIN))) << std::string(RC_RUSTYCAGE_BIN) << " is missing: build the rustycage target";
    }
    void TearDown() override { hub_.reset(); }  // before its files go with tmp_

    // The fake Hub, started on first use; the test is skipped without node.
    fake_hub * hub() {
        if (hub_) return hub_.get();
        if (!fake_hub::node_available()) return nullptr;
        const fs::path repo = root_ / "hub" / k_repo;
        fs::create_directories(repo);
        fs::create_symlink(model_file("tiny-chat-q8"), repo / "tiny-chat-Q8_0.gguf");
        fs::create_symlink(model_file("tiny-chat"), repo / "tiny-chat-F16.gguf");
        std::ofstream(repo / ".hub.json") << R"({"downloads": 42, "likes": 7})";
        hub_ = std::make_unique<fake_hub>(root_ / "hub");
        return hub_.get();
    }

    // Runs `rustycage ARGS... --models-dir <models>` (no --models-dir for search and ps).
    cli_result run(std::vector<std::string> args, const fs::path & cwd = {}) {
        auto p = start(std::move(args), cwd);
        return p->finish();
    }
    std::unique_ptr<child_process> start(std::vector<std::string> args, const fs::path & cwd = {}) {
        const std::string & command = args.front();
        if (command != "search" && command != "ps") {
            args.push_back("--models-dir");
            args.push_back(models_.string());
        }
        args.insert(args.begin(), std::string(RC_RUSTYCAGE_BIN));
        // Without the fake Hub, a port nothing listens on: no test may reach the real Hub.
        child_process::env_map env{{"HF_ENDPOINT", hub_ ? hub_->endpoint() : "http://127.0.0.1:9"}};
        return std::make_unique<child_process>(args, env, cwd);
    }

    json list_json() {
        auto r = run({"list", "--json"});
        EXPECT_EQ(r.code, 0) << r.err;
        auto j = json::parse(r.out, nullptr, false);
        EXPECT_TRUE(j.is_array()) << r.out;
        return j.is_array() ? j : json::array();
    }
    static const json * find_entry(const json & list, const std::string & name) {
        for (const auto & e : list)
            if (e.value("name", "") == name) return &e;
        return nullptr;
    }
    size_t blob_count() const {
        std::error_code ec;
        size_t n = 0;
        for (fs::directory_iterator it(models_ / "blobs", ec), end; !ec && it != end; it.increment(ec)) ++n;
        return n;
    }
    // A model made from a copy of tiny-chat-q8.gguf (created, checked, ready).
    void create_model(const std::string & name) {
        auto r = run({"create", name, "--file", model_file("tiny-chat-q8")});
        ASSERT_EQ(r.code, 0) << r.out << r.err;
    }

    rc::test::temp_dir tmp_{"cli-models"};
    fs::path root_, models_;
    std::unique_ptr<fake_hub> hub_;
};

#define REQUIRE_HUB()                                                                       \
    do {                                                                                    \
        if (!hub()) GTEST_SKIP() << "node not found: the fake Hub cannot run";               \
        ASSERT_TRUE(hub()->started()) << "the fake Hub (" << fake_hub_dir() << ") did not start"; \
    } while (0)

bool contains(const std::string & text, const std::string & part) { return text.find(part) != std::string::npos; }

TEST_F(cli_models, pull_from_hub_then_list_shows_it_ready) {
    REQUIRE_HUB();
    auto r = run({"pull", k_q8_name});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(contains(r.out, "pulled " + k_q8_name + " (Q8_0, ")) << r.out;
    // stderr is a pipe here: plain progress lines, no carriage returns.
    EXPECT_TRUE(contains(r.err, "pulling manifest")) << r.err;
    EXPECT_TRUE(contains(r.err, "100% (")) << r.err;
    EXPECT_FALSE(contains(r.err, "\r")) << r.err;

    auto list = list_json();
    const json * e = find_entry(list, k_q8_name);
    ASSERT_NE(e, nullptr) << list.dump();
    EXPECT_EQ((*e)["status"], "ready");
    EXPECT_EQ((*e)["quantization"], "Q8_0");
    EXPECT_EQ((*e)["size"], fs::file_size(model_file("tiny-chat-q8")));
    EXPECT_EQ((*e)["id"].get<std::string>().size(), 12u);
    EXPECT_EQ((*e)["origin"], "store");

    auto table = run({"ls"});
    ASSERT_EQ(table.code, 0) << table.err;
    EXPECT_TRUE(contains(table.out, "NAME")) << table.out;
    EXPECT_TRUE(contains(table.out, k_q8_name)) << table.out;
    EXPECT_TRUE(contains(table.out, "ready")) << table.out;

    auto show = run({"show", k_q8_name});
    ASSERT_EQ(show.code, 0) << show.err;
    EXPECT_TRUE(contains(show.out, "qwen2")) << show.out;
    EXPECT_TRUE(contains(show.out, "hf.co/" + k_repo)) << show.out;
}

TEST_F(cli_models, interrupted_pull_resumes_with_a_range_request) {
    REQUIRE_HUB();
    const uint64_t size = fs::file_size(model_file("tiny-chat-q8"));
    hub()->control({{"failAfterBytes", 8 << 20}});
    auto first = run({"pull", k_q8_name, "--retries", "0"});  // a pull that retries by itself: pull_retry_test
    EXPECT_NE(first.code, 0);
    EXPECT_TRUE(contains(first.err, "resume")) << first.err;
    EXPECT_EQ(find_entry(list_json(), k_q8_name), nullptr);

    auto second = run({"pull", k_q8_name});
    ASSERT_EQ(second.code, 0) << second.err;
    auto list = list_json();
    ASSERT_NE(find_entry(list, k_q8_name), nullptr);
    EXPECT_EQ(find_entry(list, k_q8_name)->at("status"), "ready");

    auto stats = hub()->stats();
    const uint64_t served = stats.value("bytesServed", uint64_t(0));
    EXPECT_GE(served, size);
    EXPECT_LT(served, size + (size / 4)) << "the second pull should not download the file again";
    bool ranged = false;
    for (const auto & req : stats["requests"]) {
        const std::string range = req.value("range", json()).is_string() ? req["range"].get<std::string>() : "";
        if (contains(req.value("path", ""), "tiny-chat-Q8_0.gguf") && range.starts_with("bytes=") && !range.starts_with("bytes=0-")) ranged = true;
    }
    EXPECT_TRUE(ranged) << stats.dump();
}

TEST_F(cli_models, sigint_cancels_a_pull_cleanly_and_the_next_pull_resumes) {
    REQUIRE_HUB();
    hub()->control({{"throttle", 4 << 20}});  // ~12 s for the whole file: time to interrupt
    auto p = start({"pull", k_q8_name});
    ASSERT_TRUE(p->read_until([](const std::string &, const std::string & err) { return contains(err, "% ("); }, std::chrono::seconds(60)))
        << "no progress line";
    // Some bytes on disk first, so the resume has something to keep.
    ASSERT_TRUE(p->read_until([](const std::string &, const std::string & err) { return contains(err, "10% ("); }, std::chrono::seconds(60)));
    p->send(SIGINT);
    auto r = p->finish(std::chrono::seconds(60));
    EXPECT_EQ(r.code, 130) << r.err;
    EXPECT_TRUE(contains(r.err, "interrupted: run the same pull again to resume")) << r.err;
    EXPECT_EQ(blob_count(), 0u);

    hub()->control({{"reset", true}});
    auto again = run({"pull", k_q8_name});
    ASSERT_EQ(again.code, 0) << again.err;
    bool ranged = false;
    const json stats = hub()->stats();
    for (const auto & req : stats["requests"])
        if (req.value("range", json()).is_string() && !req["range"].get<std::string>().starts_with("bytes=0-")) ranged = true;
    EXPECT_TRUE(ranged) << stats.dump();
}

TEST_F(cli_models, corrupt_download_is_refused_and_leaves_nothing) {
    REQUIRE_HUB();
    hub()->control({{"corrupt", k_repo + "/tiny-chat-Q8_0.gguf"}});
    auto r = run({"pull", k_q8_name});
    EXPECT_EQ(r.code, 1);
    EXPECT_TRUE(contains(r.err, "sha256")) << r.err;
    EXPECT_EQ(find_entry(list_json(), k_q8_name), nullptr);
    EXPECT_EQ(blob_count(), 0u);
}

TEST_F(cli_models, model_failing_its_check_is_listed_failed_with_an_incident) {
    // NaN Q8_0 scales in the last MiB of tensor data: llama.cpp's validation (or the test decode) refuses it.
    const fs::path bad = root_ / "bad.gguf";
    fs::copy_file(model_file("tiny-chat-q8"), bad);
    {
        std::fstream f(bad, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(-(1 << 20), std::ios::end);
        const std::string ff(1 << 20, '\xFF');
        f.write(ff.data(), std::streamsize(ff.size()));
        ASSERT_TRUE(f.good());
    }
    auto r = run({"create", "broken", "--file", bad.string()});
    EXPECT_EQ(r.code, 1);
    EXPECT_TRUE(contains(r.err, "failed its quarantine check and is listed as failed")) << r.err;

    auto list = list_json();
    const json * e = find_entry(list, "broken:latest");
    ASSERT_NE(e, nullptr) << list.dump();
    EXPECT_EQ((*e)["status"], "failed");
    EXPECT_FALSE((*e)["status_reason"].get<std::string>().empty());

    auto show = run({"show", "broken"});
    ASSERT_EQ(show.code, 0) << show.err;
    EXPECT_TRUE(contains(show.out, "Incidents")) << show.out;
    EXPECT_TRUE(contains(show.out, "quarantine_failed")) << show.out;
    auto show_json = run({"show", "broken", "--json"});
    ASSERT_EQ(show_json.code, 0) << show_json.err;
    auto j = json::parse(show_json.out);
    EXPECT_EQ(j["status"], "failed");
    ASSERT_FALSE(j["incidents"].empty());
    EXPECT_EQ(j["incidents"][0]["kind"], "quarantine_failed");
}

// Every file under `dir`, except those under `skip`.
std::set<std::string> files_under(const fs::path & dir, const fs::path & skip) {
    std::set<std::string> out;
    for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
        if (it->path() == skip) {
            it.disable_recursion_pending();
            continue;
        }
        out.insert(it->path().string());
    }
    return out;
}

TEST_F(cli_models, path_traversal_names_are_refused_and_write_nothing_outside) {
    create_model("a");
    const fs::path cwd = root_ / "work" / "deep";  // "../../x" taken as a path would land in root_
    fs::create_directories(cwd);
    const auto before = files_under(root_, models_);
    const size_t blobs = blob_count();

    for (const std::vector<std::string> & args : std::vector<std::vector<std::string>>{
             {"pull", "hf.co/../x"},
             {"pull", "hf.co/owner/../../x:Q8_0"},
             {"cp", "a", "../../x"},
             {"cp", "../../a", "b"},
             {"create", "../evil", "--file", model_file("tiny-chat-q8")},
             {"create", "hf.co/x/../../evil", "--file", model_file("tiny-chat-q8")},
             {"rm", "../../a"}}) {
        auto r = run(args, cwd);
        EXPECT_EQ(r.code, 1) << args[0] << " " << args[1] << ": " << r.out << r.err;
        EXPECT_TRUE(contains(r.err, "invalid model name")) << r.err;
    }
    EXPECT_EQ(files_under(root_, models_), before);
    EXPECT_EQ(blob_count(), blobs) << "a refused create must not import anything";
    EXPECT_FALSE(fs::exists(root_ / "x"));
    EXPECT_FALSE(fs::exists(root_ / "evil"));
    auto list = list_json();
    EXPECT_EQ(list.size(), 1u) << list.dump();
}

TEST_F(cli_models, cp_shares_the_blob_and_rm_deletes_it_with_the_last_user) {
    create_model("base");
    ASSERT_EQ(blob_count(), 1u);
    auto cp = run({"cp", "base", "other:v2"});
    ASSERT_EQ(cp.code, 0) << cp.err;
    EXPECT_TRUE(contains(cp.out, "copied base:latest to other:v2")) << cp.out;
    auto list = list_json();
    ASSERT_NE(find_entry(list, "base:latest"), nullptr);
    ASSERT_NE(find_entry(list, "other:v2"), nullptr);
    EXPECT_EQ(find_entry(list, "base:latest")->at("id"), find_entry(list, "other:v2")->at("id"));
    EXPECT_EQ(find_entry(list, "other:v2")->at("status"), "ready");
    EXPECT_EQ(blob_count(), 1u);

    auto rm = run({"rm", "base"});
    ASSERT_EQ(rm.code, 0) << rm.err;
    EXPECT_TRUE(contains(rm.out, "deleted base:latest")) << rm.out;
    EXPECT_EQ(blob_count(), 1u) << "other:v2 still uses the blob";
    EXPECT_EQ(find_entry(list_json(), "base:latest"), nullptr);

    auto rm2 = run({"rm", "other:v2"});
    ASSERT_EQ(rm2.code, 0) << rm2.err;
    EXPECT_EQ(blob_count(), 0u);
    EXPECT_TRUE(list_json().empty());

    auto missing = run({"rm", "nothing"});
    EXPECT_EQ(missing.code, 1);
    EXPECT_TRUE(contains(missing.err, "not found")) << missing.err;
}

TEST_F(cli_models, loose_files_are_listed_with_their_quantization_and_never_deleted) {
    fs::create_directories(models_);
    fs::create_symlink(model_file("tiny-chat-q8"), models_ / "demo.gguf");
    auto list = list_json();
    const json * e = find_entry(list, "demo");
    ASSERT_NE(e, nullptr) << list.dump();
    EXPECT_EQ((*e)["origin"], "file");
    EXPECT_EQ((*e)["quantization"], "Q8_0");
    EXPECT_EQ((*e)["status"], "ready");
    EXPECT_EQ((*e)["id"].get<std::string>().size(), 12u);

    auto rm = run({"rm", "demo"});
    EXPECT_EQ(rm.code, 1);
    EXPECT_TRUE(contains(rm.err, "delete the file yourself")) << rm.err;
    EXPECT_TRUE(fs::exists(models_ / "demo.gguf"));

    // A loose file becomes a store model through create --from (imported, the file left alone).
    auto create = run({"create", "imported", "--from", "demo"});
    ASSERT_EQ(create.code, 0) << create.err;
    EXPECT_TRUE(contains(create.out, "created imported:latest (ready)")) << create.out;
    EXPECT_TRUE(fs::exists(models_ / "demo.gguf"));
    EXPECT_EQ(blob_count(), 1u);
}

TEST_F(cli_models, create_from_a_modelfile_sets_system_and_parameters) {
    fs::create_directories(root_ / "mf");
    fs::copy_file(model_file("tiny-chat-q8"), root_ / "mf" / "weights.gguf");
    std::ofstream(root_ / "mf" / "Modelfile") << "# a comment\n"
                                                 "FROM ./weights.gguf\n"
                                                 "SYSTEM \"\"\"You are terse.\nAnswer in one line.\"\"\"\n"
                                                 "PARAMETER temperature 0.7\n"
                                                 "PARAMETER num_ctx 2048\n"
                                                 "PARAMETER stop \"<|im_end|>\"\n"
                                                 "parameter stop \"</s>\"\n";
    auto r = run({"create", "terse", "-f", (root_ / "mf" / "Modelfile").string(), "--parameter", "top_k=20"});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_TRUE(contains(r.out, "created terse:latest (ready)")) << r.out;

    auto show = run({"show", "terse", "--json"});
    ASSERT_EQ(show.code, 0) << show.err;
    auto j = json::parse(show.out);
    EXPECT_EQ(j["system"], "You are terse.\nAnswer in one line.");
    EXPECT_DOUBLE_EQ(j["parameters"]["temperature"].get<double>(), 0.7);
    EXPECT_EQ(j["parameters"]["num_ctx"], 2048);
    EXPECT_EQ(j["parameters"]["top_k"], 20);
    EXPECT_EQ(j["parameters"]["stop"], json({"<|im_end|>", "</s>"}));
    EXPECT_EQ(j["quantization"], "Q8_0");
    EXPECT_EQ(j["source"]["kind"], "create");

    auto mf = run({"show", "terse", "--modelfile"});
    ASSERT_EQ(mf.code, 0) << mf.err;
    EXPECT_TRUE(contains(mf.out, "FROM /")) << mf.out;
    EXPECT_TRUE(contains(mf.out, "SYSTEM \"\"\"You are terse.\nAnswer in one line.\"\"\"")) << mf.out;
    EXPECT_TRUE(contains(mf.out, "PARAMETER temperature 0.7")) << mf.out;
    EXPECT_TRUE(contains(mf.out, "PARAMETER stop \"</s>\"")) << mf.out;

    // --from a store model shares its blob and keeps its settings unless overridden.
    auto derived = run({"create", "chatty", "--from", "terse", "--system", "You are chatty."});
    ASSERT_EQ(derived.code, 0) << derived.err;
    EXPECT_EQ(blob_count(), 1u);
    auto dj = json::parse(run({"show", "chatty", "--json"}).out);
    EXPECT_EQ(dj["system"], "You are chatty.");
    EXPECT_EQ(dj["parameters"]["num_ctx"], 2048);
    EXPECT_EQ(dj["id"], j["id"]);

    // And the Modelfile show printed builds the same model again.
    const fs::path again = root_ / "mf" / "Again";
    std::ofstream(again) << mf.out;
    auto rebuilt = run({"create", "again", "-f", again.string()});
    ASSERT_EQ(rebuilt.code, 0) << rebuilt.err;
    auto aj = json::parse(run({"show", "again", "--json"}).out);
    EXPECT_EQ(aj["parameters"], j["parameters"]);
    EXPECT_EQ(aj["system"], j["system"]);
}

TEST_F(cli_models, create_refuses_what_is_not_a_gguf) {
    std::ofstream(root_ / "notes.gguf") << "not a model";
    auto r = run({"create", "junk", "--file", (root_ / "notes.gguf").string()});
    EXPECT_EQ(r.code, 1);
    EXPECT_EQ(blob_count(), 0u) << "nothing is imported before the header is read";
    auto bad_mf = root_ / "Modelfile";
    std::ofstream(bad_mf) << "FROM " << model_file("tiny-chat-q8") << "\nADAPTER ./lora.gguf\n";
    auto m = run({"create", "x", "-f", bad_mf.string()});
    EXPECT_EQ(m.code, 1);
    EXPECT_TRUE(contains(m.err, "line 2")) << m.err;
}

TEST_F(cli_models, search_lists_the_repo_and_its_quantizations) {
    REQUIRE_HUB();
    auto r = run({"search", "tiny"});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(contains(r.out, "REPO")) << r.out;
    EXPECT_TRUE(contains(r.out, k_repo)) << r.out;
    EXPECT_TRUE(contains(r.out, "Q8_0")) << r.out;
    EXPECT_TRUE(contains(r.out, "F16")) << r.out;
    auto j = json::parse(run({"search", "tiny", "--json"}).out);
    ASSERT_EQ(j.size(), 1u);
    EXPECT_EQ(j[0]["repo"], k_repo);
    EXPECT_EQ(j[0]["downloads"], 42);
}

// The Hub's verdict reaches an API client as the Hub gave it: a refused pull of a gated repository
// is a 401 that says what to do about HF_TOKEN (it was a 400 while the hub module had no codes for it).
TEST_F(cli_models, a_pull_the_hub_refuses_answers_with_the_hubs_status) {
    REQUIRE_HUB();
    hub()->control({{"requireToken", "hf_needed_0123456789"}});
    // The server reads HF_ENDPOINT / HF_TOKEN from its environment, inherited at spawn.
    const char * saved_token = std::getenv("HF_TOKEN");
    const std::string token_before = saved_token ? saved_token : "";
    setenv("HF_ENDPOINT", hub()->endpoint().c_str(), 1);
    unsetenv("HF_TOKEN");
    rc::test::server_process server({{"demo", model_file("tiny-chat")}});
    unsetenv("HF_ENDPOINT");
    if (saved_token) setenv("HF_TOKEN", token_before.c_str(), 1);
    ASSERT_TRUE(server.started());
    httplib::Client c("127.0.0.1", server.ollama_port());
    c.set_read_timeout(60);
    auto r = c.Post("/api/pull", json{{"model", k_q8_name}, {"stream", false}}.dump(), "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 401) << r->body;
    EXPECT_TRUE(contains(r->body, "HF_TOKEN")) << r->body;
    httplib::Client openai("127.0.0.1", server.openai_port());
    auto again = openai.Post("/api/pull", json{{"model", k_q8_name}, {"stream", false}}.dump(), "application/json");
    ASSERT_TRUE(again);
    EXPECT_EQ(again->status, 401);
}

TEST_F(cli_models, ps_without_a_server_says_so) {
    const std::string host = "http://127.0.0.1:" + std::to_string(free_port());
    auto r = run({"ps", "--host", host});
    EXPECT_EQ(r.code, 1);
    EXPECT_TRUE(contains(r.err, "no rustycage server answers at " + host)) << r.err;
}

TEST_F(cli_models, ps_lists_what_a_running_server_has_loaded) {
    rc::test::server_process server({{"demo", model_file("tiny-chat")}}, {"--preload", "demo"});
    ASSERT_TRUE(server.started());
    httplib::Client health("127.0.0.1", server.openai_port());  // preloads are in once it is ready
    ASSERT_TRUE(rc::test::poll_until([&] {
        auto res = health.Get("/v1/health/ready");
        return res && res->status == 200;
    }));
    const std::string host = "http://127.0.0.1:" + std::to_string(server.ollama_port());
    auto r = run({"ps", "--host", host});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(contains(r.out, "NAME")) << r.out;
    EXPECT_TRUE(contains(r.out, "demo")) << r.out;
    EXPECT_TRUE(contains(r.out, "/4096")) << r.out;  // context cells used/total
    EXPECT_TRUE(contains(r.out, "CPU") || contains(r.out, "GPU")) << r.out;
    auto j = json::parse(run({"ps", "--host", host, "--json"}).out);
    ASSERT_EQ(j["models"].size(), 1u);
}

}  // namespace
