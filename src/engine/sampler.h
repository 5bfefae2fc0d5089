#pragma once
// One request's sampler: llama.cpp's common sampler chain (penalties, top-k/p, min-p, typical,
// temperature, logit bias, grammar) configured from our sampling_params + constraint. Built on the
// submitting thread (engine::submit: compiling a grammar can take long, and the engine thread
// steps every sequence of its model), then owned and used by the engine thread only.
#include <sampling.h>

#include <memory>

#include "engine/constraint.h"
#include "engine/request.h"
#include "llama/model.h"
#include "util/result.h"

namespace rc::engine {

struct sampler_deleter {
    void operator()(common_sampler * s) const { common_sampler_free(s); }
};
using sampler_ptr = std::unique_ptr<common_sampler, sampler_deleter>;

struct prepared_sampler {
    sampler_ptr sampler;
};

// What a grammar may cost. A grammar's work per generated token grows with the vocabulary times
// the number of parse positions it keeps alive at once (a 10,000-value enum keeps 10,000), and all
// of it runs on the engine thread between two decode steps of every sequence.
struct grammar_limits {
    static constexpr size_t max_grammar_bytes = 256u << 10;  // GBNF text (from a schema, tools or a user)
    static constexpr size_t max_grammar_nesting = 256;       // groups "( … )" inside each other (gbnf_nesting)
    // Parse positions × vocabulary entries a grammar may make one token check at its widest point
    // (engine/grammar_cost.h): 16 Mi allows ~110 alternatives with a 152k vocabulary (Qwen2), ~130
    // with Llama 3's 128k. Measured on tiny-chat (152k vocabulary) on a loaded 2-core machine, an
    // enum of 400 values cost ~1 s per token at that point (10,000 values: the 66 s for a
    // few tokens); this bound keeps a token's grammar work to a few hundred ms at worst.
    static constexpr uint64_t max_checks_per_token = 16ull << 20;
};

// The grammar against grammar_limits for this model's vocabulary. Errors: invalid_argument saying
// how wide the grammar is and how wide it may be.
status check_grammar_cost(const llama::model & m, const std::string & gbnf);

// Errors: invalid_argument for a grammar that does not parse, is over grammar_limits, or
// out-of-range parameters (the message says which and how to fix it).
result<sampler_ptr> make_sampler(const llama::model & m, const sampling_params & p, const constraint & c);

// The sampler submit() prepared for `c`, or one built now when there is none.
result<sampler_ptr> take_sampler(const llama::model & m, const sampling_params & p, constraint & c);

// Checks a request's sampling parameters without building anything (HTTP threads call this so a
// bad request gets its 400 before it is queued).
status validate_sampling(const llama::model & m, const sampling_params & p);

}  // namespace rc::engine
