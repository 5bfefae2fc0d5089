#pragma once
// Exact tokenization of long prompts in pieces, each piece's tokens kept by its text — so a resumed
// conversation, whose rendered prompt repeats the previous one and adds a turn, tokenizes only the
// turn. The fleet gateway's key chains use it (gateway/model_vocabs.h).
//
// Why the pieces give llama.cpp's tokens exactly: llama.cpp first cuts the text at special-token
// occurrences (longest tokens first, each occurrence claimed from raw text) and then tokenizes each
// raw fragment on its own; the only state carried from one fragment to the next is whether the
// previous one was a special token (SPM's space prefix). So a cut just before a special token S that
// the partition is sure to claim splits the token list there too. S is sure to be claimed when:
//   * no other special-token occurrence at least as long as S overlaps S's bytes (nothing that is
//     claimed before S can take them; shorter ones come after S);
//   * S has no lstrip attribute (it would strip the end of the piece before it) and its text
//     neither starts nor ends with whitespace (another token's strip could not reach into it).
// Each piece after the first starts with S, is tokenized without BOS and must begin with S's id
// (checked; anything else falls back to tokenizing the whole text). Used only for vocabularies
// whose fragments are tokenized independently: SPM and BPE (not the hybrid-DNA or whitespace BPE
// sessions), without an appended EOS; any other tokenizes the whole text every time.
//
// Raw text is cut too, at spaces chosen by the bytes before them (one eligible space in
// `cut_one_space_in`, at least `min_piece_bytes` apart), so a prompt that grows at its end (a
// completions conversation) or changes at its start keeps the pieces in between: a space between
// two non-space bytes, none of the three inside any special token's occurrence. Why that splits
// the token list:
//   * SPM merges symbol pairs that are vocabulary tokens; when no token has "▁" after another
//     character (spm_words_merge_apart, over the vocabulary), no merge crosses "c|▁". The piece after the cut is
//     tokenized as a fragment of its own, so it starts without its space where the vocabulary adds
//     a space prefix (llama.cpp adds the same "▁" back).
//   * BPE merges inside the pre-tokenizer's words, and its expressions start a word at " x" after
//     a non-space byte when x is an ASCII letter (only such spaces are cut at).
// Both are checked at construction on a probe text (whole against cut; any difference: no raw cuts)
// and by the tests on the pinned tree's vocabularies.
//
// A piece not kept is tokenized by llama.cpp, except where it is one raw fragment, or one special
// token (no strip attribute) and one: then spm_merges (SPM) or bpe_merges (byte-level BPE) gives
// the same tokens several times faster (checked against llama.cpp on a probe at construction; any
// difference: not used).
#include <llama.h>

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace rc::llama {

class fragment_merges;

class piece_tokenizer {
  public:
    // `max_bytes`: what the kept pieces may hold (text + tokens); the least recently used go first.
    piece_tokenizer(const llama_vocab * vocab, std::string_view tokenizer_model, size_t max_bytes);
    ~piece_tokenizer();
    piece_tokenizer(const piece_tokenizer &) = delete;
    piece_tokenizer & operator=(const piece_tokenizer &) = delete;

    // The tokens llama_tokenize gives for `text`. Thread-safe.
    std::vector<llama_token> tokenize(const std::string & text, bool add_special, bool parse_special) const;

    static constexpr size_t min_piece_bytes = 32;
    static constexpr uint32_t cut_one_space_in = 8;

    // Where the pieces of `text` start after the first (byte offsets; a raw-text cut is at its
    // space): exposed for tests.
    std::vector<size_t> cuts(std::string_view text, bool parse_special = true) const;
    bool splits() const { return splits_; }          // false: this vocabulary is always tokenized whole
    bool cuts_text() const { return text_cuts_; }    // raw text is cut at spaces too
    bool merges() const { return merges_ != nullptr; }  // new pieces are merged by spm_merges or bpe_merges

    struct stats {
        size_t hits = 0, misses = 0, bytes = 0, entries = 0;
    };
    stats counters() const;

  private:
    struct trie;
    std::vector<llama_token> tokenize_whole(const std::string & text, bool add_special, bool parse_special) const;
    // One piece's tokens, kept or new (shared: the caller appends them without a copy).
    std::shared_ptr<const std::vector<llama_token>> piece(std::string_view text, bool first, bool add_special, bool parse_special) const;
    void use_merges(const llama_vocab * vocab);  // spm_merges or bpe_merges, where it agrees with llama.cpp on a probe
    // A piece by merges_: where it is one raw fragment, or one special token and a raw fragment.
    std::optional<std::vector<llama_token>> merged_piece(std::string_view text, bool bos, bool parse_special) const;
    void add_text_cuts(std::string_view text, size_t begin, size_t end, std::vector<size_t> & out) const;
    bool in_special(std::string_view text, size_t from, size_t to) const;  // any special occurrence touches [from, to)

    const llama_vocab * vocab_;
    bool splits_ = false;
    bool text_cuts_ = false;
    bool bpe_ = false;
    bool space_prefix_ = false;  // SPM adds "▁" before a fragment's text
    std::unique_ptr<trie> specials_;
    std::unique_ptr<fragment_merges> merges_;  // new pieces without llama.cpp's per-pair costs (spm_merges.h, bpe_merges.h)

    size_t max_bytes_;
    mutable std::mutex mutex_;
    // Kept pieces by a hash of their flags and text (a lookup builds no key string); the entry holds
    // the text, compared on every hit, so a hash collision is a miss, never another piece's tokens.
    struct entry {
        std::string key;  // the flags byte, then the text
        std::shared_ptr<const std::vector<llama_token>> tokens;
        std::list<uint64_t>::iterator age;
    };
    mutable std::list<uint64_t> ages_;  // most recently used first
    mutable std::unordered_map<uint64_t, entry> kept_;
    mutable stats stats_;
};

}  // namespace rc::llama
