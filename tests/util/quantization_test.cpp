#include "util/quantization.h"

#include <gtest/gtest.h>

using namespace rc::quant;

TEST(Quantization, NamesFromFileType) {
    EXPECT_EQ(name_from_file_type(15), "Q4_K_M");
    EXPECT_EQ(name_from_file_type(7), "Q8_0");
    EXPECT_EQ(name_from_file_type(1), "F16");
    EXPECT_EQ(name_from_file_type(32), "BF16");
    EXPECT_EQ(name_from_file_type(0), "F32");
    EXPECT_EQ(name_from_file_type(22), "IQ3_XS");
    EXPECT_FALSE(name_from_file_type(4));  // removed from llama.cpp
    EXPECT_FALSE(name_from_file_type(1024));
    EXPECT_FALSE(name_from_file_type(-1));
}

TEST(Quantization, NamesFromFileNames) {
    EXPECT_EQ(name_from_filename("Llama-3.2-1B-Instruct-Q4_K_M.gguf"), "Q4_K_M");
    EXPECT_EQ(name_from_filename("llama-3.2-1b-instruct-q4_k_m.gguf"), "Q4_K_M");
    EXPECT_EQ(name_from_filename("Qwen2.5-7B-Instruct-IQ3_XXS.gguf"), "IQ3_XXS");
    EXPECT_EQ(name_from_filename("Qwen2.5-7B-Instruct-IQ3_XS.gguf"), "IQ3_XS");
    EXPECT_EQ(name_from_filename("model.Q8_0-00001-of-00003.gguf"), "Q8_0");
    EXPECT_EQ(name_from_filename("Q5_K_M/model-Q5_K_M-00002-of-00002.gguf"), "Q5_K_M");
    EXPECT_EQ(name_from_filename("phi-3-mini-bf16.gguf"), "BF16");
    EXPECT_EQ(name_from_filename("phi-3-mini-f16.gguf"), "F16");
    EXPECT_EQ(name_from_filename("gemma-2b_Q6_K.gguf"), "Q6_K");
    EXPECT_FALSE(name_from_filename("model.gguf"));
    EXPECT_FALSE(name_from_filename("F16X-model.gguf"));
    EXPECT_FALSE(name_from_filename("README.md"));
}

TEST(Quantization, CanonicalAndPreference) {
    EXPECT_EQ(canonical("q4_k_m"), "Q4_K_M");
    EXPECT_EQ(canonical("iq4_xs"), "IQ4_XS");
    EXPECT_FALSE(canonical("Q9_K"));
    ASSERT_FALSE(preference_order().empty());
    EXPECT_EQ(preference_order().front(), "Q4_K_M");
    for (const auto & n : preference_order()) EXPECT_EQ(canonical(n), n);
    EXPECT_LT(bits_per_weight("Q4_K_M"), bits_per_weight("Q8_0"));
    EXPECT_EQ(bits_per_weight("unknown"), 16.0);
}
