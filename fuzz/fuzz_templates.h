#pragma once
// Shared by the template fuzzers: tight render budgets (a render past them is an error, not a
// finding; libFuzzer's -timeout then catches any loop the budget misses) and the pinned tree's
// real templates.
#include <fstream>
#include <sstream>
#include <string>

#include "llama/template_budget.h"

namespace rc::fuzz {

inline void use_fuzz_template_limits() {
    llama::template_limits l;
    l.max_template_bytes = 64u << 10;
    l.max_steps = 200'000;
    l.max_values = 200'000;
    l.max_string_bytes = 1u << 20;
    l.max_time = std::chrono::milliseconds(2000);
    llama::set_template_limits(l);
}

// A template of the pinned llama.cpp tree (models/templates/NAME), read once.
inline std::string tree_template(const std::string & name) {
    std::ifstream in(std::string(RC_LLAMA_TEMPLATES_DIR) + "/" + name);
    std::stringstream ss;
    ss << in.rdbuf();
    if (ss.str().empty()) std::abort();  // the tree moved: fix the name
    return ss.str();
}

}  // namespace rc::fuzz
