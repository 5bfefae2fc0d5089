#pragma once
// What spm_merges and bpe_merges share: the interface the piece tokenizer calls for a raw fragment,
// and an open-addressing table of texts (llama.cpp's std::unordered_map<std::string, …> lookups were
// ~2/3 of its merge time).
#include <llama.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rc::llama {

// A raw fragment's tokens as llama.cpp's session for the vocabulary gives them, faster.
class fragment_merges {
  public:
    virtual ~fragment_merges() = default;
    // Appends the tokens of `text` (no special-token occurrence in it) to `out`; false, and `out`
    // as it was, where this text is llama.cpp's to decide.
    virtual bool tokenize(std::string_view text, std::vector<llama_token> & out) const = 0;
};

// Text → a non-negative value; setting a text again replaces its value (a later token of the same
// text wins, as in llama.cpp's map).
class text_table {
  public:
    void set(std::string_view text, int32_t value);
    int32_t find(std::string_view text) const;  // -1: not there
    size_t longest() const { return longest_; }
    size_t size() const { return used_; }
    size_t bytes() const { return texts_.capacity() + slots_.capacity() * sizeof(slot); }

  private:
    struct slot {
        uint64_t hash = 0;
        uint32_t offset = 0, length = 0;  // in texts_
        int32_t value = -1;               // -1: empty
    };
    static uint64_t hash(std::string_view text);
    std::string_view text_of(const slot & s) const { return std::string_view(texts_).substr(s.offset, s.length); }
    size_t slot_of(std::string_view text, uint64_t h) const;  // where text is, or the empty slot it would take
    void grow();

    std::string texts_;        // every text, one after another
    std::vector<slot> slots_;  // a power of two, at most half full
    size_t used_ = 0;
    size_t longest_ = 0;
};

}  // namespace rc::llama
