// spm_merges (llama/spm_merges.h) gives llama.cpp's SPM tokens for raw text, on the pinned tree's SPM
// vocabularies, over texts made to reach every branch: ties between equal pairs (runs of one
// letter), whitespace runs, multi-byte characters with and without a token, bytes that are not
// UTF-8 (a lead byte swallowing what follows), control bytes and a literal "▁". The piece
// tokenizer uses it for those vocabularies (its probe agrees).
#include <gtest/gtest.h>

#include <common.h>

#include <random>

#include "llama/model.h"
#include "tree_vocabs.h"
#include "llama/piece_tokenizer.h"
#include "llama/spm_merges.h"

namespace {

using rc::test::load_tree_vocab;

std::string random_text(std::mt19937 & rng) {
    static const std::vector<std::string> parts = {"a", "aa", "aaaa", "e", "the", "The", " ", "  ", "    ", "\n", "\n\n", "\t", "\r\n", "0", "12",
                                                   "345", ".", ",", "!", "'", "\"", "-", "_", "(", ")", "{", "}", "<", ">", "/", "\\", "\u00e9",
                                                   "na\u00efve", "\u00fc", "\u2014", "\u201c", "\u2713", "\u4f60\u597d", "\u4e16", "\u3053\u3093",
                                                   "\U0001F999", "\U0001F600", "\u2581", "\x01", "\x7f", "\x80", "\xbf", "\xc3", "\xe4\xbd",
                                                   "\xf0\x9f\xa6", "\xff", "river123", "bridge", " Hello", "world", "don't", "it's", "ing", "tion"};
    std::string t;
    const int n = std::uniform_int_distribution<int>(1, 60)(rng);
    for (int i = 0; i < n; ++i) t += parts[std::uniform_int_distribution<size_t>(0, parts.size() - 1)(rng)];
    return t;
}

class spm_vocab : public ::testing::TestWithParam<std::string> {};

TEST_P(spm_vocab, gives_llama_cpp_tokens_for_raw_text) {
    const auto m = load_tree_vocab(GetParam());
    ASSERT_TRUE(m);
    const llama_vocab * v = m->vocab();
    ASSERT_EQ(llama_vocab_type(v), LLAMA_VOCAB_TYPE_SPM);
    const auto a = common_tokenize(v, "a", false, false);
    const bool space_prefix = !a.empty() && std::string_view(llama_vocab_get_text(v, a.front())).starts_with("\u2581");
    const rc::llama::spm_merges merges(v, space_prefix);
    const auto specials = rc::test::special_texts(v);
    std::mt19937 rng(20261205);
    int compared = 0, bytes_fallback = 0;
    for (int n = 0; n < 3000; ++n) {
        const std::string text = random_text(rng);
        if (rc::test::holds_special(specials, text)) continue;
        const auto want = common_tokenize(v, text, false, false);
        std::vector<llama_token> got = {42};  // appended to, not replaced
        ASSERT_TRUE(merges.tokenize(text, got)) << GetParam() << " text: " << text;
        ASSERT_EQ(got.front(), 42);
        got.erase(got.begin());
        ASSERT_EQ(got, want) << GetParam() << " text: " << text;
        ++compared;
        for (llama_token t : want) bytes_fallback += std::string_view(llama_vocab_get_text(v, t)).starts_with("<0x");
    }
    EXPECT_GT(compared, 2500);
    EXPECT_GT(bytes_fallback, 100) << "the texts should reach the byte tokens";
    // The piece tokenizer merges this vocabulary's pieces with it.
    const rc::llama::piece_tokenizer pieces(v, m->meta("tokenizer.ggml.model"), size_t{1} << 20);
    EXPECT_TRUE(pieces.merges());
}

INSTANTIATE_TEST_SUITE_P(vocabularies, spm_vocab, ::testing::Values("llama-spm", "phi-3", "baichuan"), rc::test::vocab_test_name);

TEST(spm_merges, a_byte_llama_cpp_cannot_map_leaves_the_output_as_it_was) {
    // A BPE vocabulary has no <0xXX> tokens for most bytes: what spm_merges cannot spell, it declines.
    const auto m = load_tree_vocab("gpt-2");
    ASSERT_TRUE(m);
    const rc::llama::spm_merges merges(m->vocab(), false);
    std::vector<llama_token> out = {7};
    EXPECT_FALSE(merges.tokenize("\x01\xff", out));
    EXPECT_EQ(out, std::vector<llama_token>{7});
}

}  // namespace
