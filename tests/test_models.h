#pragma once
// Paths of the generated test models (see tests/generate_models.cmake) and a shared loader, so each
// test binary loads a model once.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "llama/model.h"

namespace rc::test {

inline std::string model_path(const std::string & preset) { return std::string(RC_TEST_MODELS_DIR) + "/" + preset + ".gguf"; }

inline std::shared_ptr<llama::model> shared_model(const std::string & preset) {
    static std::map<std::string, std::shared_ptr<llama::model>> cache;
    auto & m = cache[preset];
    if (!m) {
        auto r = llama::model::load(model_path(preset));
        EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.err().message);
        if (r.ok()) m = r.value();
    }
    return m;
}

}  // namespace rc::test
