// The one sampling-field table (src/api/sampling_fields.h), as each dialect reads it.
#include <gtest/gtest.h>

#include "api/sampling_fields.h"
#include "http/api_error.h"

using rc::api::read_sampling_fields;
using rc::api::sampling_dialect;
using rc::engine::sampling_params;
using rc::http::json;

namespace {

sampling_params read(const json & fields, sampling_dialect d) {
    sampling_params s;
    read_sampling_fields(fields, d, s);
    return s;
}

// The field a refusal names, or "" when the fields were accepted.
std::string refused_field(const json & fields, sampling_dialect d) {
    try {
        read(fields, d);
        return "";
    } catch (const rc::http::api_error & e) {
        EXPECT_EQ(e.status, 400);
        return e.param;
    }
}

}  // namespace

TEST(sampling_fields, both_dialects_set_the_same_engine_fields) {
    const json f = {{"temperature", 0.5}, {"top_k", 7},          {"top_p", 0.9},          {"min_p", 0.1}, {"typical_p", 0.8},
                    {"repeat_penalty", 1.1}, {"presence_penalty", 0.3}, {"frequency_penalty", -0.4}, {"seed", 42}};
    for (auto d : {sampling_dialect::openai, sampling_dialect::ollama}) {
        const auto s = read(f, d);
        EXPECT_FLOAT_EQ(s.temperature, 0.5f);
        EXPECT_EQ(s.top_k, 7);
        EXPECT_FLOAT_EQ(s.top_p, 0.9f);
        EXPECT_FLOAT_EQ(s.min_p, 0.1f);
        EXPECT_FLOAT_EQ(s.typical_p, 0.8f);
        EXPECT_FLOAT_EQ(s.repeat_penalty, 1.1f);
        EXPECT_FLOAT_EQ(s.presence_penalty, 0.3f);
        EXPECT_FLOAT_EQ(s.frequency_penalty, -0.4f);
        EXPECT_EQ(s.seed, 42u);
    }
    const auto untouched = read(json::object(), sampling_dialect::openai);
    EXPECT_FLOAT_EQ(untouched.temperature, sampling_params{}.temperature);
    EXPECT_FALSE(untouched.seed.has_value());
}

TEST(sampling_fields, each_dialect_keeps_its_own_ranges_and_fields) {
    EXPECT_EQ(refused_field({{"temperature", 3}}, sampling_dialect::openai), "temperature");
    EXPECT_FLOAT_EQ(read({{"temperature", 3}}, sampling_dialect::ollama).temperature, 3.0f);
    EXPECT_EQ(refused_field({{"temperature", 101}}, sampling_dialect::ollama), "temperature");
    EXPECT_EQ(refused_field({{"top_k", -1}}, sampling_dialect::openai), "top_k");
    EXPECT_EQ(read({{"top_k", -1}}, sampling_dialect::ollama).top_k, -1);
    EXPECT_EQ(refused_field({{"top_p", "high"}}, sampling_dialect::ollama), "top_p");
    // repeat_last_n is Ollama's: an OpenAI body's is not read.
    EXPECT_EQ(read({{"repeat_last_n", 8}}, sampling_dialect::ollama).repeat_last_n, 8);
    EXPECT_EQ(read({{"repeat_last_n", 8}}, sampling_dialect::openai).repeat_last_n, sampling_params{}.repeat_last_n);
}

TEST(sampling_fields, a_negative_seed_is_random_for_ollama_and_wraps_for_openai) {
    EXPECT_FALSE(read({{"seed", -1}}, sampling_dialect::ollama).seed.has_value());
    EXPECT_EQ(read({{"seed", -1}}, sampling_dialect::openai).seed, 0xffffffffu);
    EXPECT_EQ(refused_field({{"seed", 1.5}}, sampling_dialect::openai), "seed");
}
