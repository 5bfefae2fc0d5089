// The gateway's piece tokenizer (llama/piece_tokenizer.h) gives llama.cpp's tokens exactly, cold and
// from its kept pieces, for the real vocabularies in the pinned llama.cpp tree (models/ggml-vocab-*:
// SPM, byte-level BPE with many pre-tokenizers, WPM), on texts made to break it: special tokens
// next to each other, inside whitespace, cut in half, overlapping a longer one, and the vocabularies'
// own tokenizer test strings. And a resumed chat re-tokenizes only its new turn.
#include <gtest/gtest.h>

#include <common.h>

#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "llama/model.h"
#include "tree_vocabs.h"
#include "llama/piece_tokenizer.h"

namespace {

using rc::llama::piece_tokenizer;

using rc::test::load_tree_vocab;

// The vocabulary's tokenizer test strings (models/ggml-vocab-*.gguf.inp), when it has them.
std::vector<std::string> samples(const std::string & name) {
    std::ifstream f(std::string(RC_LLAMA_VOCABS_DIR) + "/ggml-vocab-" + name + ".gguf.inp");
    std::stringstream ss;
    ss << f.rdbuf();
    std::vector<std::string> out;
    const std::string all = ss.str(), sep = "\n__ggml_vocab_test__\n";
    for (size_t at = 0; at < all.size();) {
        const size_t end = all.find(sep, at);
        out.push_back(all.substr(at, end == std::string::npos ? std::string::npos : end - at));
        if (end == std::string::npos) break;
        at = end + sep.size();
    }
    if (out.empty()) out = {"Hello world", " Hello World!", "3.14 + 2 = 5.14", "🦙 llama.cpp", "\n\n\t  x"};
    return out;
}

std::vector<std::string> special_texts(const llama_vocab * v) {
    std::vector<std::string> out;
    for (llama_token id = 0; id < llama_vocab_n_tokens(v); ++id) {
        if (llama_vocab_get_attr(v, id) & (LLAMA_TOKEN_ATTR_CONTROL | LLAMA_TOKEN_ATTR_USER_DEFINED | LLAMA_TOKEN_ATTR_UNKNOWN))
            out.emplace_back(llama_vocab_get_text(v, id));
    }
    return out;
}

// Texts where a special token's occurrence overlaps a longer one's, so only the longer is claimed: a
// token inside a longer one ("<unused1>" in "<unused12>"-like pairs), and a token whose head is the
// tail of a longer one (T + the rest of S). Cutting before the shorter one there would be wrong.
std::vector<std::string> overlapping(const std::vector<std::string> & specials) {
    std::set<std::string> all(specials.begin(), specials.end());
    std::map<std::string, std::string> by_prefix;  // a proper prefix → one special token starting with it
    for (const auto & s : specials)
        for (size_t k = 1; k < s.size(); ++k) by_prefix.emplace(s.substr(0, k), s);
    std::vector<std::string> out;
    for (const auto & t : specials) {
        for (size_t i = 1; i < t.size() && out.size() < 4000; ++i) {
            for (size_t n = 1; i + n <= t.size(); ++n)
                if (n < t.size() && all.contains(t.substr(i, n))) out.push_back(t);
            if (auto it = by_prefix.find(t.substr(i)); it != by_prefix.end()) out.push_back(t + it->second.substr(t.size() - i));
        }
    }
    return out;
}

// A text of random parts: special tokens (whole, halved, doubled), the vocabulary's test strings,
// whitespace runs, and the characters special tokens are made of.
std::string hostile_text(std::mt19937 & rng, const std::vector<std::string> & specials, const std::vector<std::string> & overlaps,
                         const std::vector<std::string> & strings) {
    static const std::vector<std::string> ws = {" ", "  ", "\n", "\n\n", "\t", " \n ", "\r\n"};
    static const std::string glue = "<|>[]/_:";
    auto pick = [&](const auto & v) -> const auto & { return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)]; };
    std::string t;
    const int parts = std::uniform_int_distribution<int>(1, 24)(rng);
    for (int i = 0; i < parts; ++i) {
        switch (std::uniform_int_distribution<int>(0, 7)(rng)) {
            case 7: if (!overlaps.empty()) t += pick(overlaps); break;
            case 0: case 1: if (!specials.empty()) t += pick(specials); break;
            case 2: if (!specials.empty()) { const auto & s = pick(specials); t += s.substr(0, s.size() / 2); } break;
            case 3: if (!specials.empty()) { const auto & s = pick(specials); t += s.substr(s.size() / 2) + s; } break;
            case 4: t += pick(strings); break;
            case 5: t += pick(ws); break;
            default: t += glue[std::uniform_int_distribution<size_t>(0, glue.size() - 1)(rng)]; break;
        }
    }
    return t;
}

// One vocabulary of the tree, its piece tokenizer and the texts the tests build from.
class piece_tokenizer_vocab : public ::testing::TestWithParam<std::string> {
  protected:
    void SetUp() override {
        m = load_tree_vocab(GetParam());
        ASSERT_TRUE(m);
        v = m->vocab();
        pieces = std::make_unique<piece_tokenizer>(v, m->meta("tokenizer.ggml.model"), size_t{8} << 20);
        specials = special_texts(v);
        strings = samples(GetParam());
        overlaps = overlapping(specials);
    }
    std::shared_ptr<rc::llama::model> m;
    const llama_vocab * v = nullptr;
    std::unique_ptr<piece_tokenizer> pieces;
    std::vector<std::string> specials, strings, overlaps;
};

TEST_P(piece_tokenizer_vocab, gives_llama_cpp_tokens_cold_and_kept) {
    std::mt19937 rng(20261204);
    size_t cut_texts = 0;
    for (int n = 0; n < 400; ++n) {
        std::string text = hostile_text(rng, specials, overlaps, strings);
        // A conversation that grows: the same text again with more after it, so pieces are reused.
        for (const std::string & t : {text, text + hostile_text(rng, specials, overlaps, strings)}) {
            if (!pieces->cuts(t).empty()) ++cut_texts;
            for (const bool add_special : {true, false}) {
                for (const bool parse_special : {true, false}) {
                    const auto want = common_tokenize(v, t, add_special, parse_special);
                    ASSERT_EQ(pieces->tokenize(t, add_special, parse_special), want) << GetParam() << " add_special=" << add_special
                                                                                      << " parse_special=" << parse_special << " text: " << t;
                    ASSERT_EQ(pieces->tokenize(t, add_special, parse_special), want) << GetParam() << " (kept pieces) text: " << t;
                }
            }
        }
    }
    const auto c = pieces->counters();
    EXPECT_GT(c.hits, 0u);
    EXPECT_LE(c.bytes, size_t{8} << 20);
    if (pieces->splits()) {
        EXPECT_GT(cut_texts, 100u) << "the texts should exercise the cuts";
    }
}

// Long raw text: prose of the vocabulary's test strings and words joined by spaces, whitespace runs
// and special tokens here and there, so the raw-text cuts (one space in ~8, at a space) are made
// many times; a prompt that grows at its end, as a completions conversation does, reuses its pieces->
TEST_P(piece_tokenizer_vocab, cuts_raw_text_at_spaces_and_gives_llama_cpp_tokens) {
    static const std::vector<std::string> words = {"the", "Quick", "brown,", "fox", "12", "jumps", "(over)", "don't", "it's", "\"x\"", "na\u00efve",
                                                   "\u4f60\u597d", "a.b", "e-mail", "3.14", "#tag", "x:y", "[1]", "<b>", "\u2014", "ok."};
    std::mt19937 rng(20261205);
    auto pick = [&](const auto & list) -> const auto & { return list[std::uniform_int_distribution<size_t>(0, list.size() - 1)(rng)]; };
    size_t raw_cuts = 0;
    for (int n = 0; n < 40; ++n) {
        std::string text;
        for (int turn = 0; turn < 6; ++turn) {
            while (text.size() < static_cast<size_t>(turn + 1) * 700) {
                const int r = std::uniform_int_distribution<int>(0, 19)(rng);
                if (r == 0) text += hostile_text(rng, specials, overlaps, strings);
                else if (r == 1 && !strings.empty()) text += pick(strings);
                else text += pick(words);
                text += r == 2 ? "  " : r == 3 ? "\n" : " ";
            }
            for (size_t c : pieces->cuts(text, false)) raw_cuts += text[c] == ' ';
            for (const bool parse_special : {true, false}) {
                const auto want = common_tokenize(v, text, true, parse_special);
                ASSERT_EQ(pieces->tokenize(text, true, parse_special), want) << GetParam() << " parse_special=" << parse_special << " text: " << text;
            }
        }
    }
    // Every SPM and BPE vocabulary here passes the construction's probe (WPM is never cut).
    EXPECT_EQ(pieces->cuts_text(), GetParam() != "bert-bge");
    if (pieces->cuts_text()) {
        EXPECT_GT(raw_cuts, 200u) << "the texts should exercise the raw-text cuts";
        EXPECT_GT(pieces->counters().hits, 200u) << "a prompt that grows at its end reuses its pieces";
    }
    std::cout << GetParam() << ": raw-text cuts " << (pieces->cuts_text() ? "on" : "off") << ", " << raw_cuts << " made\n";
}

INSTANTIATE_TEST_SUITE_P(vocabularies, piece_tokenizer_vocab,
                         ::testing::Values("llama-spm", "llama-bpe", "qwen2", "qwen35", "gemma-4", "phi-3", "command-r", "deepseek-coder",
                                           "deepseek-llm", "gpt-2", "falcon", "mpt", "starcoder", "refact", "bert-bge"), rc::test::vocab_test_name);

TEST(piece_tokenizer, resumed_chat_tokenizes_only_its_new_turn) {
    const auto m = load_tree_vocab("qwen2");
    ASSERT_TRUE(m);
    const piece_tokenizer pieces(m->vocab(), m->meta("tokenizer.ggml.model"), size_t{8} << 20);
    ASSERT_TRUE(pieces.splits());
    std::string chat = "<|im_start|>system\nYou are terse.<|im_end|>\n";
    auto turn = [](const std::string & role, const std::string & text) { return "<|im_start|>" + role + "\n" + text + "<|im_end|>\n"; };
    for (int i = 0; i < 6; ++i) chat += turn(i % 2 ? "assistant" : "user", "message " + std::to_string(i) + " with some words in it");
    EXPECT_EQ(pieces.tokenize(chat + "<|im_start|>assistant\n", true, true), common_tokenize(m->vocab(), chat + "<|im_start|>assistant\n", true, true));
    const auto before = pieces.counters();
    // The next request: the same history, the reply and a new question.
    chat += turn("assistant", "a reply") + turn("user", "a new question");
    EXPECT_EQ(pieces.tokenize(chat + "<|im_start|>assistant\n", true, true), common_tokenize(m->vocab(), chat + "<|im_start|>assistant\n", true, true));
    const auto after = pieces.counters();
    EXPECT_GE(after.hits - before.hits, 13u) << "every piece of the history is kept";
    EXPECT_LE(after.misses - before.misses, 4u) << "only the new turns' pieces are tokenized";
}

TEST(piece_tokenizer, cuts_only_before_tokens_nothing_longer_overlaps) {
    const auto m = load_tree_vocab("qwen2");
    ASSERT_TRUE(m);
    const piece_tokenizer pieces(m->vocab(), m->meta("tokenizer.ggml.model"), size_t{1} << 20);
    EXPECT_EQ(pieces.cuts("hi<|im_start|>user"), (std::vector<size_t>{2}));
    EXPECT_EQ(pieces.cuts("<|im_start|>x"), std::vector<size_t>{}) << "no cut at the start";
    EXPECT_EQ(pieces.cuts("a<|im_end|><|im_start|>"), (std::vector<size_t>{1, 11}));
    EXPECT_EQ(pieces.cuts("plain text with no special tokens"), std::vector<size_t>{});
}

TEST(piece_tokenizer, a_full_cache_drops_the_least_recently_used) {
    const auto m = load_tree_vocab("qwen2");
    ASSERT_TRUE(m);
    const piece_tokenizer pieces(m->vocab(), m->meta("tokenizer.ggml.model"), 4096);
    for (int i = 0; i < 200; ++i) {
        const std::string t = "turn " + std::to_string(i) + "<|im_start|>user\nquestion number " + std::to_string(i);
        ASSERT_EQ(pieces.tokenize(t, true, true), common_tokenize(m->vocab(), t, true, true));
    }
    const auto c = pieces.counters();
    EXPECT_LE(c.bytes, 4096u);
    EXPECT_GT(c.entries, 0u);
    EXPECT_LT(c.entries, 400u);
}

}  // namespace
