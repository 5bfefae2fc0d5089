#pragma once
// The pinned llama.cpp tree's test vocabularies (models/ggml-vocab-NAME.gguf), for the tokenizer
// tests: a vocabulary-only load, a gtest parameter name for each, and the special tokens' texts a
// raw-text comparison skips.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "llama/model.h"

namespace rc::test {

inline std::shared_ptr<llama::model> load_tree_vocab(const std::string & name) {
    llama::model_load_options lo;
    lo.vocab_only = true;
    auto m = llama::model::load(std::string(RC_LLAMA_VOCABS_DIR) + "/ggml-vocab-" + name + ".gguf", lo);
    EXPECT_TRUE(m.ok()) << name << ": " << (m.ok() ? "" : m.err().message);
    return m.ok() ? m.value() : nullptr;
}

// "llama-spm" → "llama_spm" (gtest names take no '-').
inline std::string vocab_test_name(const ::testing::TestParamInfo<std::string> & info) {
    std::string n = info.param;
    for (auto & c : n)
        if (c == '-') c = '_';
    return n;
}

// The texts llama.cpp's partition claims from raw text (control tokens are left as text without
// parse_special, but they are skipped too: the comparisons are of raw fragments).
inline std::vector<std::string> special_texts(const llama_vocab * v) {
    std::vector<std::string> out;
    for (llama_token id = 0; id < llama_vocab_n_tokens(v); ++id)
        if (llama_vocab_get_attr(v, id) & (LLAMA_TOKEN_ATTR_CONTROL | LLAMA_TOKEN_ATTR_USER_DEFINED | LLAMA_TOKEN_ATTR_UNKNOWN))
            out.push_back(llama_vocab_get_text(v, id));
    return out;
}

inline bool holds_special(const std::vector<std::string> & specials, const std::string & text) {
    for (const auto & s : specials)
        if (text.find(s) != std::string::npos) return true;
    return false;
}

}  // namespace rc::test
