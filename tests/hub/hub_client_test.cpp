// list_files, search and the error paths of hub_client against the fake Hub.
#include <gtest/gtest.h>

#include <algorithm>

#include "hub/hub_errors.h"
#include "hub_fixture.h"

using namespace rc::hub;
using rc::errc;
using rc::test::fixture;
using rc::test::listed;

namespace {

bool contains(const std::string & s, const std::string & part) { return s.find(part) != std::string::npos; }

class hub_client_test : public rc::test::hub_server_test {
  protected:
    size_t request_count() { return server().stats()["requests"].size(); }
};

}  // namespace

TEST_F(hub_client_test, list_files_has_the_hub_shape) {
    auto files = client().list_files("acme/Tiny-GGUF");
    ASSERT_TRUE(files.ok()) << files.err().message;
    std::vector<std::string> paths;
    for (const auto & f : files.value()) paths.push_back(f.path);
    // Recursive, files only (no "docs" directory entry), hidden files not served.
    EXPECT_EQ(paths, (std::vector<std::string>{"README.md", "Tiny-F16.gguf", "Tiny-Q4_K_M.gguf", "Tiny-Q8_0.gguf", "docs/notes.txt",
                                               "mmproj-Tiny-F16.gguf"}));
    for (const auto & f : files.value()) {
        auto want = listed(fixture("acme/Tiny-GGUF", f.path));
        EXPECT_EQ(f, want) << f.path;  // LFS sha256 for .gguf (including the symlinked one), none for the rest
    }
    auto req = server().stats()["requests"][0];
    EXPECT_EQ(req["path"], "/api/models/acme/Tiny-GGUF/tree/main");
    EXPECT_EQ(req["query"], "?recursive=true");
    EXPECT_TRUE(req["ua"].get<std::string>().starts_with("rustycage/")) << req["ua"];
    EXPECT_FALSE(req["auth"].get<bool>());
}

TEST_F(hub_client_test, list_files_follows_pages) {
    auto whole = client().list_files("acme/Tiny-GGUF");
    ASSERT_TRUE(whole.ok());
    server().control({{"pageSize", 2}});
    server().reset_stats();
    auto paged = client().list_files("acme/Tiny-GGUF");
    ASSERT_TRUE(paged.ok()) << paged.err().message;
    EXPECT_EQ(paged.value(), whole.value());
    EXPECT_GE(request_count(), 3u);  // 7 entries (with the directory) in pages of 2
}

TEST_F(hub_client_test, list_files_of_a_revision) {
    EXPECT_TRUE(client().list_files("acme/Big-GGUF", "main").ok());
    auto r = client().list_files("acme/Big-GGUF", "no-such-branch");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.err().code, errc::not_found);
}

TEST_F(hub_client_test, unknown_repo_is_not_found) {
    auto r = client().list_files("acme/does-not-exist");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.err().code, errc::not_found);
    EXPECT_TRUE(contains(r.err().message, "acme/does-not-exist")) << r.err().message;
}

TEST_F(hub_client_test, invalid_repo_ids_are_refused_before_any_request) {
    auto c = client();
    for (const char * bad : {"../x", "a/b/c", "", "x", "acme/../etc", "acme/Tiny-GGUF/../../x", "a/b?x=1"}) {
        auto r = c.list_files(bad);
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_EQ(r.err().code, errc::invalid_argument) << bad;
        auto d = c.download(bad, "main", repo_file{"x.gguf", 1, ""}, scratch() / "p");
        ASSERT_FALSE(d.ok()) << bad;
        EXPECT_EQ(d.err().code, errc::invalid_argument) << bad;
    }
    auto d = c.download("acme/Tiny-GGUF", "main", repo_file{"../../etc/passwd", 1, ""}, scratch() / "p");
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.err().code, errc::invalid_argument);
    EXPECT_FALSE(c.list_files("acme/Tiny-GGUF", "../main").ok());
    EXPECT_EQ(request_count(), 0u);
    EXPECT_FALSE(std::filesystem::exists(scratch() / "p"));
}

TEST_F(hub_client_test, gated_repo_needs_the_token) {
    const std::string token = "hf_fixtureToken_1234567890";
    server().control({{"requireToken", token}});

    auto anon = client().list_files("acme/Tiny-GGUF");
    ASSERT_FALSE(anon.ok());
    EXPECT_EQ(anon.err().code, errc::unauthenticated) << "401 GatedRepo";
    EXPECT_TRUE(contains(anon.err().message, "HF_TOKEN")) << anon.err().message;

    const std::string wrong = "hf_wrongToken_0987654321";
    auto bad = client(wrong).list_files("acme/Tiny-GGUF");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.err().code, errc::unauthenticated) << "a refused token is a plain 401";
    EXPECT_TRUE(contains(bad.err().message, "HF_TOKEN")) << bad.err().message;
    EXPECT_FALSE(contains(bad.err().message, wrong)) << bad.err().message;

    auto good = client(token).list_files("acme/Tiny-GGUF");
    ASSERT_TRUE(good.ok()) << good.err().message;
    EXPECT_TRUE(server().stats()["requests"].back()["auth"].get<bool>());

    // No failure with a token set ever shows it.
    auto c = client(token);
    for (const auto & e : {c.list_files("acme/missing").err(), c.list_files("acme/Tiny-GGUF", "nope").err(),
                           c.download("acme/Tiny-GGUF", "main", repo_file{"absent.gguf", 5, ""}, scratch() / "p").err()})
        EXPECT_FALSE(contains(e.message, token)) << e.message;
}

TEST_F(hub_client_test, search_returns_gguf_repos_with_quants_in_preference_order) {
    auto hits = client().search("TINY", 10);
    ASSERT_TRUE(hits.ok()) << hits.err().message;
    // Case-insensitive match, GGUF repos only (acme/tiny-docs has none), most downloaded first.
    ASSERT_EQ(hits->size(), 2u);
    EXPECT_EQ((*hits)[0].id, "other/tinyllama-GGUF");
    EXPECT_EQ((*hits)[0].downloads, 5000u);
    EXPECT_EQ((*hits)[0].quants, std::vector<std::string>{"Q5_K_M"});
    EXPECT_EQ((*hits)[1].id, "acme/Tiny-GGUF");
    EXPECT_EQ((*hits)[1].likes, 10u);
    EXPECT_EQ((*hits)[1].quants, (std::vector<std::string>{"Q4_K_M", "Q8_0", "F16"}));  // projector excluded

    auto req = server().stats()["requests"][0];
    EXPECT_EQ(req["path"], "/api/models");
    EXPECT_EQ(req["query"], "?search=TINY&filter=gguf&sort=downloads&direction=-1&limit=10&full=true");

    auto one = client().search("gguf", 1);
    ASSERT_TRUE(one.ok());
    ASSERT_EQ(one->size(), 1u);
    EXPECT_EQ((*one)[0].id, "other/tinyllama-GGUF");
    auto none = client().search("nothing matches this", 5);
    ASSERT_TRUE(none.ok());
    EXPECT_TRUE(none->empty());
}

TEST_F(hub_client_test, unreachable_hub_is_unavailable) {
    hub_config cfg;
    cfg.endpoint = "http://127.0.0.1:1";  // nothing listens on port 1
    auto r = hub_client(cfg).list_files("acme/Tiny-GGUF");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.err().code, errc::unavailable);
    EXPECT_TRUE(contains(r.err().message, "127.0.0.1")) << r.err().message;
}
