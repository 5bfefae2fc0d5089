#include "hub/gguf_choice.h"

#include <gtest/gtest.h>

using namespace rc::hub;
using rc::errc;

namespace {

repo_file f(std::string path, uint64_t size = 100) { return repo_file{std::move(path), size, ""}; }

std::vector<std::string> paths(const gguf_choice & c) {
    std::vector<std::string> out;
    for (const auto & p : c.parts) out.push_back(p.path);
    return out;
}

bool contains(const std::string & s, const std::string & part) { return s.find(part) != std::string::npos; }

// A typical GGUF repo: several quantizations, a split one, a projector, docs.
const std::vector<repo_file> repo = {
    f(".gitattributes", 1),     f("README.md", 2),          f("Tiny-F16.gguf", 1600),  f("Tiny-Q8_0.gguf", 800),
    f("mmproj-Tiny-F16.gguf", 50), f("Tiny-Q4_K_M.gguf", 400), f("Tiny-Q2_K.gguf", 200),
    f("Q6_K/Tiny-Q6_K-00002-of-00002.gguf", 300), f("Q6_K/Tiny-Q6_K-00001-of-00002.gguf", 350),
};

}  // namespace

TEST(gguf_choice, default_picks_the_first_preferred_quantization) {
    for (const char * wanted : {"", "latest", "LATEST", " "}) {
        auto c = choose_gguf(repo, wanted);
        ASSERT_TRUE(c.ok()) << wanted << ": " << c.err().message;
        EXPECT_EQ(c->quant, "Q4_K_M");
        EXPECT_EQ(paths(c.value()), std::vector<std::string>{"Tiny-Q4_K_M.gguf"});
        EXPECT_EQ(c->total_size, 400u);
    }
    // Without Q4_K_M, the next in rc::quant::preference_order(): Q6_K before Q8_0.
    std::vector<repo_file> no_q4;
    for (const auto & x : repo)
        if (x.path != "Tiny-Q4_K_M.gguf") no_q4.push_back(x);
    auto c = choose_gguf(no_q4, "");
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->quant, "Q6_K");
}

TEST(gguf_choice, by_quantization_case_insensitive) {
    auto c = choose_gguf(repo, "q8_0");
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->quant, "Q8_0");
    EXPECT_EQ(paths(c.value()), std::vector<std::string>{"Tiny-Q8_0.gguf"});
    // F16 means the model, never the projector of the same precision.
    c = choose_gguf(repo, "f16");
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(paths(c.value()), std::vector<std::string>{"Tiny-F16.gguf"});
}

TEST(gguf_choice, by_file_name_or_path) {
    auto c = choose_gguf(repo, "Tiny-Q2_K.gguf");
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->quant, "Q2_K");
    EXPECT_EQ(c->total_size, 200u);
    // Naming one part of a split model picks every part.
    c = choose_gguf(repo, "Q6_K/Tiny-Q6_K-00002-of-00002.gguf");
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(paths(c.value()).size(), 2u);
}

TEST(gguf_choice, groups_split_parts_in_order) {
    auto c = choose_gguf(repo, "Q6_K");
    ASSERT_TRUE(c.ok()) << c.err().message;
    EXPECT_EQ(c->quant, "Q6_K");
    EXPECT_EQ(paths(c.value()), (std::vector<std::string>{"Q6_K/Tiny-Q6_K-00001-of-00002.gguf", "Q6_K/Tiny-Q6_K-00002-of-00002.gguf"}));
    EXPECT_EQ(c->total_size, 650u);
}

TEST(gguf_choice, a_missing_split_part_is_a_clear_error) {
    std::vector<repo_file> files = {f("Big-Q4_K_M-00001-of-00003.gguf"), f("Big-Q4_K_M-00003-of-00003.gguf"), f("Big-Q8_0.gguf")};
    for (const char * wanted : {"", "Q4_K_M", "Big-Q4_K_M-00001-of-00003.gguf"}) {
        auto c = choose_gguf(files, wanted);
        ASSERT_FALSE(c.ok()) << wanted;
        EXPECT_EQ(c.err().code, errc::not_found);
        EXPECT_TRUE(contains(c.err().message, "Big-Q4_K_M-00002-of-00003.gguf")) << c.err().message;
    }
    EXPECT_TRUE(choose_gguf(files, "Q8_0").ok());
}

TEST(gguf_choice, an_absent_quantization_lists_the_available_ones) {
    auto c = choose_gguf(repo, "Q5_K_M");
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.err().code, errc::not_found);
    EXPECT_TRUE(contains(c.err().message, "Q4_K_M, Q6_K, Q8_0, Q2_K, F16")) << c.err().message;

    c = choose_gguf(repo, "not-a-thing");
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.err().code, errc::invalid_argument);
    EXPECT_TRUE(contains(c.err().message, "Q4_K_M")) << c.err().message;

    c = choose_gguf(repo, "Other-Q4_K_M.gguf");
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.err().code, errc::not_found);
}

TEST(gguf_choice, projectors_only_when_named) {
    auto c = choose_gguf(repo, "mmproj-Tiny-F16.gguf");
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(paths(c.value()), std::vector<std::string>{"mmproj-Tiny-F16.gguf"});

    std::vector<repo_file> only_projector = {f("mmproj-model-f16.gguf"), f("README.md")};
    c = choose_gguf(only_projector, "");
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.err().code, errc::not_found);
}

TEST(gguf_choice, without_known_quantizations_the_smallest_model) {
    std::vector<repo_file> files = {f("big.gguf", 900), f("small.gguf", 90), f("mmproj.gguf", 1), f("notes.txt", 1)};
    auto c = choose_gguf(files, "");
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(paths(c.value()), std::vector<std::string>{"small.gguf"});
    EXPECT_EQ(c->quant, "");
}

TEST(gguf_choice, no_gguf_at_all) {
    auto c = choose_gguf({f("README.md"), f("model.safetensors")}, "");
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.err().code, errc::not_found);
}

TEST(gguf_choice, parses_split_names) {
    auto s = parse_split_name("dir/Model-Q4_K_M-00002-of-00005.gguf");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->stem, "dir/Model-Q4_K_M");
    EXPECT_EQ(s->part, 2);
    EXPECT_EQ(s->count, 5);
    EXPECT_FALSE(parse_split_name("Model-Q4_K_M.gguf"));
    EXPECT_FALSE(parse_split_name("Model-00006-of-00005.gguf"));
    EXPECT_FALSE(parse_split_name("Model-00000-of-00005.gguf"));
    EXPECT_FALSE(parse_split_name("Model-0001-of-0005.gguf"));
    EXPECT_FALSE(parse_split_name("-00001-of-00002.gguf"));
    EXPECT_TRUE(is_gguf_file("A.GGUF"));
    EXPECT_FALSE(is_gguf_file("A.gguf.part"));
    EXPECT_TRUE(is_projector_file("x/mmproj-model-f16.gguf"));
    EXPECT_TRUE(is_projector_file("Qwen2-VL-mmproj-F16.gguf"));
    EXPECT_FALSE(is_projector_file("mmproj/model-Q4_K_M.gguf"));
}
