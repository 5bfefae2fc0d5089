#pragma once
// A generated model (tiny-chat) with a real family's chat template from the pinned llama.cpp tree
// (models/templates/), for tests of what each template does with a request.
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "llama/model.h"
#include "test_models.h"

namespace rc::test {

inline std::shared_ptr<llama::model> with_template(const std::string & file) {
    std::ifstream in(std::string(RC_LLAMA_TEMPLATES_DIR) + "/" + file);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_FALSE(text.str().empty()) << file;
    llama::model_load_options o;
    o.chat_template = text.str();
    auto m = llama::model::load(model_path("tiny-chat"), o);
    EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.err().message);
    return m.ok() ? m.value() : nullptr;
}

}  // namespace rc::test
