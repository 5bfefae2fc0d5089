#pragma once
// What llama.cpp's JSON-schema-to-grammar converter cannot honour, found before it silently
// weakens the constraint: it turns a `pattern` it cannot translate into "any string", so a client
// asking for a back-reference would get output that does not match and no word about it. Checked on
// HTTP threads before a schema (response_format, format, text.format, tool parameters) is used.
#include <cstddef>
#include <cstdint>
#include <string>

#include "util/result.h"

namespace rc::engine {

// The most repetitions a schema may ask for in one place (a pattern's {m,n}, minLength, minItems):
// llama.cpp's grammar expands each into that many rules and refuses more than this.
inline constexpr uint64_t max_schema_repetition = 2000;
// The most optional properties one object may have: the converter's time grows with their cube.
inline constexpr size_t max_optional_properties = 512;

// Errors: invalid_argument naming the pattern (cut short) and the construct, e.g. "the schema's
// pattern \"^(a)\\1$\" uses a back-reference (\1), which constrained decoding cannot express";
// or "invalid JSON schema: …" for limits that contradict each other or exceed what a grammar can
// hold: a repetition {m,n} with m > n or past max_schema_repetition, minLength > maxLength (and
// minItems/maxItems, minProperties/maxProperties), minimum > maximum, repetitions nested past
// max_schema_repetition copies in all, more than max_optional_properties in one object. Checked before conversion:
// llama.cpp's converter looped for ever on {5,2}. Text that is not JSON passes (the converter
// reports that itself).
status check_schema_support(const std::string & json_schema);

// The same for one regex, as found in a schema's `pattern`.
status check_pattern_support(const std::string & pattern);

}  // namespace rc::engine
