#pragma once
// Byte-level BPE merges as llama.cpp's BPE session makes them, without its per-pair costs: llama.cpp
// builds std::strings for every candidate pair and looks the pair up in a map keyed by two strings
// (~0.22 µs a byte; a 2 KB prompt cost the gateway ~0.5 ms). Here a symbol is a number (its text's
// place in one table) and a pair is looked up by two numbers.
//
// The words are llama.cpp's own: its pre-tokenizer splits the text (llama_vocab_bpe_words, our patch
// scripts/llama-patches/vocab-bpe-parts.patch, runs the vocabulary's own expressions). The merges are
// the same algorithm, so the tokens are the same: each byte of a word is a symbol (its GPT-2
// byte-encoded character); while a pair of neighbours is a merge, the merge of lowest rank is made —
// the leftmost among equals (llama.cpp's queue order; a pair whose symbols changed since it was
// queued is skipped there and here). A word that is a token is that token where the vocabulary
// ignores merges (llama3's). Each final symbol is its token, else the tokens of its encoded bytes.
//
// Raw text only, and valid UTF-8 only (llama.cpp replaces what is not before splitting): special-token
// partitioning, BOS/EOS are the caller's (piece_tokenizer, which checks it against llama.cpp on a
// probe before using it); the tests compare it on the pinned tree's BPE vocabularies.
#include <llama.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "llama/merge_tables.h"

namespace rc::llama {

class bpe_merges : public fragment_merges {
  public:
    // nullptr where `vocab` is not byte-level BPE tokenized word by word.
    static std::unique_ptr<bpe_merges> make(const llama_vocab * vocab);

    bool tokenize(std::string_view text, std::vector<llama_token> & out) const override;
    size_t bytes() const { return texts_.bytes() + pairs_.capacity() * sizeof(pair_slot); }

  private:
    explicit bpe_merges(const llama_vocab * vocab);
    struct pair_slot {  // of an open-addressing table: (left, right) symbols → rank and merged symbol
        uint64_t key = 0;
        int32_t rank = -1;  // -1: empty
        int32_t merged = -1;
    };
    struct symbol {
        uint32_t start, n;  // bytes of the word
        int32_t id;         // the text's number in texts_ (a token's own id), -1: in no token or merge
        int32_t prev, next;
    };
    struct candidate {
        int32_t rank, left, right, merged;
        uint32_t size;
    };
    struct scratch {
        std::vector<symbol> symbols;
        std::vector<candidate> queue;
        std::string encoded;
    };
    const pair_slot * find_pair(int32_t left, int32_t right) const;
    void add_pair(int32_t left, int32_t right, int32_t rank, int32_t merged);
    int32_t id_of(std::string_view text);  // its number, a new one past the tokens for a text no token has
    void merge_word(std::string_view word, scratch & work, std::vector<llama_token> & out) const;

    const llama_vocab * vocab_;
    int32_t n_tokens_;
    int32_t next_id_;
    bool ignore_merges_;
    text_table texts_;              // token texts (their ids), then merge texts no token has
    std::vector<pair_slot> pairs_;  // a power of two, at most half full
    std::array<int32_t, 256> byte_symbol_{};                 // a byte's encoded character's number
    std::array<std::array<llama_token, 2>, 256> byte_fallback_{};  // the tokens of its encoded bytes (-1: none)
};

}  // namespace rc::llama
