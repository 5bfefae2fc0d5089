#pragma once
// What constrains the sampler: a grammar (from a JSON schema, a user GBNF, or the chat template's
// tool-call grammar), possibly lazy (only after a trigger such as "<tool_call>").
#include <chat.h>
#include <common.h>

#include <memory>
#include <string>
#include <vector>

namespace rc::engine {

// A sampler chain engine::submit() built for one request on the caller's thread (sampler.h), so
// the engine thread, which steps every sequence of the model, never compiles a grammar.
struct prepared_sampler;

struct constraint {
    common_grammar_type type = COMMON_GRAMMAR_TYPE_NONE;
    std::string grammar;                            // GBNF
    bool lazy = false;
    std::vector<common_grammar_trigger> triggers;   // for lazy grammars (word / pattern triggers)
    std::vector<std::string> preserved_tokens;      // special tokens the tool-call format relies on
    std::string generation_prompt;                  // assistant prefix already in the prompt
    // Set by engine::submit, taken by the engine thread when the request is admitted. Copies of a
    // request made before submit() have none (a sampler has state and is never shared).
    std::shared_ptr<prepared_sampler> prepared;

    bool empty() const { return type == COMMON_GRAMMAR_TYPE_NONE || grammar.empty(); }
};

}  // namespace rc::engine
