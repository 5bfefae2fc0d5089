// Command line of rustycage-mkmodel. Parsing only: no files are touched here.
#pragma once

#include "mkmodel_presets.h"
#include "mkmodel_result.h"

#include <cstdint>
#include <optional>
#include <string>

namespace rc::mkmodel {

// Used when --seed is not given; the test suites' models are generated with it.
inline constexpr uint64_t k_default_seed = 42;

struct options {
    bool help = false;
    bool list = false;
    std::string preset;
    std::string out;
    uint64_t seed = k_default_seed;
    std::optional<std::string> llama_src;
    std::optional<std::string> name;
    std::optional<matrix_type_choice> matrix_type;  // --type; unset: the preset's own
    unsigned n_threads = 0;  // 0: one per hardware thread
};

// Accepts "--flag value" and "--flag=value". Fails on unknown flags, missing or malformed values,
// and on a generation request without both --preset and --out.
result<options> parse_args(int argc, const char * const * argv);

std::string usage_text();

}  // namespace rc::mkmodel
