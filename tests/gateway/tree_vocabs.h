#pragma once
// The pinned llama.cpp tree's test vocabularies (models/ggml-vocab-NAME.gguf), for the tokenizer
// tests: a vocabulary-only load, and a gtest parameter name for each.
#include <gtest/gtest.h>

#include <memory>
#include <string>

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

}  // namespace rc::test
