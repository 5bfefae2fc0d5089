#pragma once
// What a GBNF grammar costs per generated token, before it is ever used. llama.cpp constrains a
// token by checking every candidate of the vocabulary against every parse position the grammar
// keeps alive (its "stacks"), so one token costs about vocabulary × live positions, and it runs on
// the engine thread between two decode steps of every sequence. The live positions at a point are
// the alternatives reachable there without consuming text: 1 for a literal, N for an N-value enum
// (and 2^k for k nested two-way choices over a shared rule). `widest_point` computes the largest
// such count anywhere in the grammar from llama.cpp's own parse of it. Thread-safe, pure.
#include <cstdint>
#include <string>

#include "util/result.h"

namespace rc::engine {

struct grammar_cost {
    uint64_t widest_point = 0;  // most parse positions alive at once (saturates at 2^62)
    size_t rules = 0;           // after llama.cpp expanded groups and repetitions into rules
};

// Errors: invalid_argument when llama.cpp's parser refuses the grammar.
result<grammar_cost> measure_grammar(const std::string & gbnf);

// The deepest nesting of groups "( … )" in GBNF text (strings, character classes and comments
// skipped), without parsing it: llama.cpp's parser recurses once per level, so this is checked
// before it runs (60,000 levels in a 120 KB grammar overflowed its stack).
size_t gbnf_nesting(const std::string & gbnf);

}  // namespace rc::engine
