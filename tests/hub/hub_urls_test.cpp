#include "hub/hub_urls.h"

#include <gtest/gtest.h>

using namespace rc::hub;

TEST(hub_urls, accepts_ordinary_repo_ids) {
    for (const char * ok : {"bartowski/Llama-3.2-1B-Instruct-GGUF", "Qwen/Qwen2.5-0.5B-Instruct-GGUF", "a/b", "unsloth/gemma-3_4b.it"})
        EXPECT_TRUE(is_valid_repo_id(ok)) << ok;
}

TEST(hub_urls, refuses_unsafe_repo_ids) {
    for (const char * bad : {"", "a", "/x", "x/", "../x", "a/..", "a/b/c", "a//b", "a/.b", "a/b-", "-a/b", "a/b..c",
                             "a/b--c", "a b/c", "a/b?c", "a/b#c", "a/%2e%2e", "a\\b/c", "ä/b"}) {
        auto st = check_repo_id(bad);
        ASSERT_FALSE(st.ok()) << bad;
        EXPECT_EQ(st.err().code, rc::errc::invalid_argument);
    }
    EXPECT_FALSE(is_valid_repo_id(std::string(97, 'a') + "/b"));
}

TEST(hub_urls, checks_revisions_and_paths) {
    EXPECT_TRUE(check_revision("main").ok());
    EXPECT_TRUE(check_revision("refs/pr/1").ok());
    EXPECT_FALSE(check_revision("").ok());
    EXPECT_FALSE(check_revision("../main").ok());
    EXPECT_FALSE(check_revision("ma\nin").ok());

    EXPECT_TRUE(check_repo_path("model.gguf").ok());
    EXPECT_TRUE(check_repo_path("Q4_K_M/model-00001-of-00002.gguf").ok());
    for (const char * bad : {"", "/etc/passwd", "../x", "a/../b", "a//b", "a/./b", "a/", "a\\b", "a\tb"})
        EXPECT_FALSE(check_repo_path(bad).ok()) << bad;
}

TEST(hub_urls, percent_encodes_components) {
    EXPECT_EQ(encode_component("refs/pr/1"), "refs%2Fpr%2F1");
    EXPECT_EQ(encode_component("a b&c=d"), "a%20b%26c%3Dd");
    EXPECT_EQ(encode_component("Q4_K_M-x.gguf~"), "Q4_K_M-x.gguf~");
    EXPECT_EQ(encode_path("dir with space/file#1.gguf"), "dir%20with%20space/file%231.gguf");
}

TEST(hub_urls, builds_the_hub_urls) {
    EXPECT_EQ(tree_url("https://huggingface.co", "acme/x", "main"), "https://huggingface.co/api/models/acme/x/tree/main?recursive=true");
    EXPECT_EQ(resolve_url("https://hf.co", "acme/x", "refs/pr/2", "sub/m q.gguf"), "https://hf.co/acme/x/resolve/refs%2Fpr%2F2/sub/m%20q.gguf");
    EXPECT_EQ(search_url("https://hf.co", "llama 3", 5),
              "https://hf.co/api/models?search=llama%203&filter=gguf&sort=downloads&direction=-1&limit=5&full=true");
}
