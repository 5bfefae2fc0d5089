// JSON schemas as `response_format`, Ollama's `format` or a tool's parameters bring them, through
// what the server does with one: the body's bounds (parse_json_bounded), check_schema_support (the
// limits llama.cpp's converter does not check: {5,2} once made it loop for ever), the conversion to
// GBNF (engine::schema_constraint), and that grammar through the checks and the parser a sampler
// would use (nesting, size, llama.cpp's own parse in measure_grammar). An error is fine; a crash, a
// hang, a leak or UB is a finding.
#include <cstdint>
#include <string>

#include "http/json_fields.h"
#include "engine/chat_format.h"
#include "engine/grammar_cost.h"
#include "engine/sampler.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    auto schema = rc::http::parse_json_bounded(std::string(reinterpret_cast<const char *>(data), size));
    if (!schema) return 0;
    auto c = rc::engine::schema_constraint(rc::http::dump(*schema));
    if (!c) return 0;
    const std::string & gbnf = c->grammar;
    if (gbnf.size() > rc::engine::grammar_limits::max_grammar_bytes || rc::engine::gbnf_nesting(gbnf) > rc::engine::grammar_limits::max_grammar_nesting) return 0;
    (void)rc::engine::measure_grammar(gbnf);
    return 0;
}
