#pragma once
// Log-probabilities of the sampled token and its best alternatives, from the raw logits (before
// penalties, temperature and grammar), the way OpenAI reports them.
#include <vector>

#include "engine/request.h"
#include "llama/model.h"

namespace rc::engine {

token_choice compute_logprobs(const llama::model & m, const float * logits, llama_token chosen, int n_top);

}  // namespace rc::engine
