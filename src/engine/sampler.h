#pragma once
// One request's sampler: llama.cpp's common sampler chain (penalties, top-k/p, min-p, typical,
// temperature, logit bias, grammar) configured from our sampling_params + constraint.
// Owned and used by the engine thread only.
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

// Errors: invalid_argument for a grammar that does not parse or out-of-range parameters.
result<sampler_ptr> make_sampler(const llama::model & m, const sampling_params & p, const constraint & c);

// Checks a request's sampling parameters without building anything (HTTP threads call this so a
// bad request gets its 400 before it is queued).
status validate_sampling(const llama::model & m, const sampling_params & p);

}  // namespace rc::engine
