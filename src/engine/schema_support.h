#pragma once
// What llama.cpp's JSON-schema-to-grammar converter cannot honour, found before it silently
// weakens the constraint: it turns a `pattern` it cannot translate into "any string", so a client
// asking for a back-reference would get output that does not match and no word about it. Checked on
// HTTP threads before a schema (response_format, format, text.format, tool parameters) is used.
#include <string>

#include "util/result.h"

namespace rc::engine {

// Errors: invalid_argument naming the pattern (cut short) and the construct, e.g. "the schema's
// pattern \"^(a)\\1$\" uses a back-reference (\1), which constrained decoding cannot express".
// Text that is not JSON passes (the converter reports that itself).
status check_schema_support(const std::string & json_schema);

// The same for one regex, as found in a schema's `pattern`.
status check_pattern_support(const std::string & pattern);

}  // namespace rc::engine
