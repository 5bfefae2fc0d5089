// bpe_merges (llama/bpe_merges.h) gives llama.cpp's byte-level BPE tokens for raw text, on every
// such vocabulary of the pinned tree (their pre-tokenizers differ: digits one by one or in threes,
// contractions, case, punctuation runs, newlines), over texts made to reach every branch: ties
// between equal pairs (runs of one letter), whitespace runs, multi-byte characters, combining marks,
// control bytes, NBSP and soft hyphen (bytes GPT-2 encodes apart). Text that is not UTF-8 is left to
// llama.cpp. And every token's own text. The piece tokenizer uses it for those vocabularies (its probe agrees).
#include <gtest/gtest.h>

#include <common.h>

#include <algorithm>
#include <random>

#include "llama/bpe_merges.h"
#include "llama/model.h"
#include "llama/piece_tokenizer.h"
#include "tree_vocabs.h"

namespace {

using rc::test::holds_special;
using rc::test::load_tree_vocab;
using rc::test::special_texts;

std::string random_text(std::mt19937 & rng) {
    static const std::vector<std::string> parts = {
        "a", "aa", "aaaa", "e", "the", "The", "THE", "CamelCase", " ", "  ", "    ", "\n", "\n\n", " \n ", "\t", "\r\n", "\r", "0", "12", "345",
        "1234567", "3.14", ".", "...", ",", "!", "?!", "'", "'s", "'S", "'ll", "'LL", "'re", "'ve", "'d", "'m", "'t", "\"", "-", "--", "_", "(",
        ")", "{", "}", "<", ">", "/", "//", "\\", "#", "$", "@", "\u00e9", "e\u0301", "na\u00efve", "\u00fc", "\u00a0", "\u00ad", "\u2014",
        "\u201c", "\u2713", "\u4f60\u597d", "\u4e16", "\u3053\u3093", "\u0645\u0631\u062d\u0628\u0627", "\u0928\u092e\u0938\u094d\u0924\u0947",
        "\U0001F999", "\U0001F600", "\u2581", "\x01", "\x7f", "river123", "bridge", " Hello", "world", "don't", "it's", "ing", "tion",
        "https://x.org/a?b=c", "foo_bar", "x=1;", "    return x;"};
    std::string t;
    const int n = std::uniform_int_distribution<int>(1, 60)(rng);
    for (int i = 0; i < n; ++i) t += parts[std::uniform_int_distribution<size_t>(0, parts.size() - 1)(rng)];
    return t;
}

class bpe_vocab : public ::testing::TestWithParam<std::string> {};

TEST_P(bpe_vocab, gives_llama_cpp_tokens_for_raw_text) {
    const auto m = load_tree_vocab(GetParam());
    ASSERT_TRUE(m);
    const llama_vocab * v = m->vocab();
    const auto merges = rc::llama::bpe_merges::make(v);
    ASSERT_TRUE(merges) << GetParam() << " is byte-level BPE";
    const auto specials = special_texts(v);
    std::mt19937 rng(20261205);
    int compared = 0;
    for (int n = 0; n < 3000; ++n) {
        const std::string text = random_text(rng);
        if (holds_special(specials, text)) continue;
        const auto want = common_tokenize(v, text, false, false);
        std::vector<llama_token> got = {42};  // appended to, not replaced
        ASSERT_TRUE(merges->tokenize(text, got)) << GetParam() << " text: " << text;
        ASSERT_EQ(got.front(), 42);
        got.erase(got.begin());
        ASSERT_EQ(got, want) << GetParam() << " text: " << text;
        ++compared;
    }
    EXPECT_GT(compared, 1000);
    // Every token's own text (where a vocabulary ignores merges, a word that is a token is that token).
    int own = 0;
    const int stride = std::max(1, llama_vocab_n_tokens(v) / 30000);  // ~30k tokens a vocabulary: seconds, not minutes
    for (llama_token id = 0; id < llama_vocab_n_tokens(v); id += stride) {
        if (llama_vocab_get_attr(v, id) != LLAMA_TOKEN_ATTR_NORMAL) continue;
        const std::string text = common_token_to_piece(v, id, false);
        if (text.empty() || holds_special(specials, text)) continue;
        std::vector<llama_token> got;
        if (!merges->tokenize(text, got)) continue;  // not UTF-8 on its own
        ASSERT_EQ(got, common_tokenize(v, text, false, false)) << GetParam() << " token " << id << ": " << text;
        ++own;
    }
    EXPECT_GT(own, llama_vocab_n_tokens(v) / stride / 2);
    // The piece tokenizer merges this vocabulary's pieces with it.
    const rc::llama::piece_tokenizer pieces(v, m->meta("tokenizer.ggml.model"), size_t{1} << 20);
    EXPECT_TRUE(pieces.merges());
}

INSTANTIATE_TEST_SUITE_P(vocabularies, bpe_vocab,
                         ::testing::Values("gpt-2", "llama-bpe", "qwen2", "qwen35", "deepseek-coder", "deepseek-llm", "falcon", "mpt", "starcoder",
                                           "refact", "command-r", "gpt-neox"),
                         rc::test::vocab_test_name);

TEST(bpe_merges, text_that_is_not_utf8_is_left_to_llama_cpp) {
    // llama.cpp replaces such bytes before splitting words: not ours to follow.
    const auto m = load_tree_vocab("qwen2");
    ASSERT_TRUE(m);
    const auto merges = rc::llama::bpe_merges::make(m->vocab());
    ASSERT_TRUE(merges);
    for (const std::string bad : {"a\xff", "\xc3", "x\xe4\xbd", "\xc0\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80"}) {
        std::vector<llama_token> out = {7};
        EXPECT_FALSE(merges->tokenize(bad, out)) << bad;
        EXPECT_EQ(out, std::vector<llama_token>{7});
    }
}

TEST(bpe_merges, only_byte_level_bpe_vocabularies_take_it) {
    for (const std::string name : {"llama-spm", "gemma-4", "bert-bge"}) {  // SPM; BPE on raw UTF-8; WPM
        const auto m = load_tree_vocab(name);
        ASSERT_TRUE(m);
        EXPECT_FALSE(rc::llama::bpe_merges::make(m->vocab())) << name;
    }
}

}  // namespace
