#pragma once
// SentencePiece merges as llama.cpp's SPM session makes them, without its per-pair costs: llama.cpp
// builds a std::string for every candidate pair, a reverse-merge map entry for every match, and one
// queue over the whole text (~0.2 µs a byte; a 2 KB prompt cost the gateway ~0.6 ms). Here
// a pair is a view into the text, pairs longer than the vocabulary's longest token are never looked
// up, no reverse map is kept (a merged symbol is always a token, so llama.cpp reads it only for
// symbols that are not), and where the vocabulary allows it each word is merged on its own queue.
//
// The algorithm is the same, so are the tokens: the text's spaces become "▁" (one before it when
// the vocabulary adds a space prefix), each UTF-8 lead byte starts a symbol, and while a pair of
// neighbours spells a token, the pair with the highest token score is merged — the leftmost among equals
// (llama.cpp's queue order; a pair whose symbols changed since it was queued is skipped there and
// here). Each final symbol is its token, else its bytes' <0xXX> tokens.
//
// Raw text only: special-token partitioning, BOS/EOS are the caller's (piece_tokenizer, which checks
// it against llama.cpp on a probe before using it); the tests compare it on the pinned tree's SPM
// vocabularies.
#include <llama.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "llama/merge_tables.h"

namespace rc::llama {

// True when no token of `vocab` holds "▁" after something other than "▁": then no merge crosses a
// "▁" that follows another character, so the text's words ("▁" runs and what follows them up to the
// next such "▁") merge apart — the queue's order within each word is the whole text's order
// restricted to it, so the tokens are the words' tokens one after another.
bool spm_words_merge_apart(const llama_vocab * vocab);

class spm_merges : public fragment_merges {
  public:
    // An SPM vocabulary; `space_prefix`: it puts "▁" before a fragment's text (llama.cpp's add_space_prefix).
    spm_merges(const llama_vocab * vocab, bool space_prefix);

    // False where a byte has no token of its own (llama.cpp decides then).
    bool tokenize(std::string_view text, std::vector<llama_token> & out) const override;

  private:
    struct symbol {
        uint32_t start, n;
        int32_t prev, next;
    };
    struct pair {
        float score;
        int32_t left, right;
        uint32_t size;
    };
    struct scratch {
        std::vector<symbol> symbols;
        std::vector<pair> queue;
    };
    bool merge(std::string_view escaped, scratch & work, std::vector<llama_token> & out) const;  // one word (or all)

    text_table tokens_;         // text → token
    std::vector<float> scores_;  // by token
    std::array<llama_token, 256> byte_tokens_{};
    bool space_prefix_;
    bool words_apart_;  // spm_words_merge_apart
};

}  // namespace rc::llama
