#include "hub/hub_json.h"

#include <gtest/gtest.h>

#include "hub/http_client.h"

using namespace rc::hub;
using nlohmann::json;

TEST(hub_json, parses_a_tree_listing_as_the_hub_sends_it) {
    // Shape copied from https://huggingface.co/api/models/<repo>/tree/main?recursive=true
    auto j = json::parse(R"([
      {"type":"file","oid":"a6344aac8c09253b3b630fb776ae94478aa0275b","size":1519,"path":".gitattributes"},
      {"type":"directory","oid":"1111","size":0,"path":"Q8_0"},
      {"type":"file","oid":"f1e0","size":135,"lfs":{"oid":"6C3B8BFBE1A7AE9C35A5F3AD7DBE4B5A3AA4A5E2E8F6A8E1C6B1D1C0F0E0D0C0","size":807694464,"pointerSize":135},
       "xetHash":"abc","path":"Q8_0/model-Q8_0.gguf"},
      {"type":"file","size":7,"path":"README.md","oid":"x","extra":{"future":true}}
    ])");
    auto files = parse_tree(j);
    ASSERT_TRUE(files.ok());
    ASSERT_EQ(files->size(), 3u);
    EXPECT_EQ((*files)[0], (repo_file{".gitattributes", 1519, ""}));
    EXPECT_EQ((*files)[1].path, "Q8_0/model-Q8_0.gguf");
    EXPECT_EQ((*files)[1].size, 807694464u);  // the content's size, not the pointer's
    EXPECT_EQ((*files)[1].sha256, "6c3b8bfbe1a7ae9c35a5f3ad7dbe4b5a3aa4a5e2e8f6a8e1c6b1d1c0f0e0d0c0");
    EXPECT_EQ((*files)[2], (repo_file{"README.md", 7, ""}));
}

TEST(hub_json, sizes_out_of_range_are_clamped_not_undefined) {
    // Found by fuzz_hub_json: a float size beyond uint64 was converted with undefined behaviour.
    auto files = parse_tree(json::parse(R"([{"type":"file","size":8.07694e+26,"path":"a.gguf"},{"type":"file","size":-3.5,"path":"b.gguf"},
                                            {"type":"file","size":12.0,"path":"c.gguf"}])"));
    ASSERT_TRUE(files.ok());
    ASSERT_EQ(files->size(), 3u);
    EXPECT_EQ((*files)[0].size, UINT64_MAX);
    EXPECT_EQ((*files)[1].size, 0u);
    EXPECT_EQ((*files)[2].size, 12u);
}

TEST(hub_json, rejects_what_is_not_a_listing) {
    EXPECT_FALSE(parse_tree(json::parse(R"({"error":"x"})")).ok());
    EXPECT_FALSE(parse_tree(json::parse(R"([{"type":"file","size":3}])")).ok());
}

TEST(hub_json, parses_search_hits_with_quants_in_preference_order) {
    auto j = json::parse(R"([
      {"_id":"1","id":"acme/A-GGUF","downloads":1200,"likes":7,"siblings":[
         {"rfilename":"A-Q8_0.gguf"},{"rfilename":"A-F16.gguf"},{"rfilename":"mmproj-A-Q4_K_M.gguf"},
         {"rfilename":"A-Q4_K_M-00001-of-00002.gguf"},{"rfilename":"A-Q4_K_M-00002-of-00002.gguf"},{"rfilename":"README.md"}]},
      {"modelId":"acme/B-GGUF"},
      {"downloads":3}
    ])");
    auto hits = parse_search(j);
    ASSERT_TRUE(hits.ok());
    ASSERT_EQ(hits->size(), 2u);
    EXPECT_EQ((*hits)[0].id, "acme/A-GGUF");
    EXPECT_EQ((*hits)[0].downloads, 1200u);
    EXPECT_EQ((*hits)[0].likes, 7u);
    EXPECT_EQ((*hits)[0].quants, (std::vector<std::string>{"Q4_K_M", "Q8_0", "F16"}));
    EXPECT_EQ((*hits)[1].id, "acme/B-GGUF");
    EXPECT_EQ((*hits)[1].downloads, 0u);
    EXPECT_TRUE((*hits)[1].quants.empty());
}

TEST(hub_json, finds_the_next_page_link) {
    EXPECT_EQ(link_next(R"(<https://huggingface.co/api/models/a/b/tree/main?recursive=true&cursor=abc>; rel="next")"),
              "https://huggingface.co/api/models/a/b/tree/main?recursive=true&cursor=abc");
    EXPECT_EQ(link_next(R"(<https://x/prev>; rel="prev", <https://x/next>; rel="next")"), "https://x/next");
    EXPECT_EQ(link_next(R"(<https://x/prev>; rel="prev")"), "");
    EXPECT_EQ(link_next(""), "");
}
