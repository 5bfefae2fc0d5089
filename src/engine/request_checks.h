#pragma once
// The checks a request must pass before the engine takes it, written once. The engine runs them on
// every submit, whoever the caller; the API runs the same functions earlier, before it renders or
// submits anything, so that its 400 names the client's field ('prompt', 'context', 'logit_bias').
#include <span>
#include <string>

#include "engine/request.h"
#include "llama/model.h"

namespace rc::engine {

struct request_problem {
    enum class kind { none, embedding_model, text_model, empty_prompt, token_outside_vocabulary };
    kind what = kind::none;
    llama_token token = -1;  // token_outside_vocabulary: the first such token

    explicit operator bool() const { return what != kind::none; }
    std::string message() const;  // in the engine's words; the API names the field itself
};

// A text request to an embedding model, or an embedding request to a text model.
request_problem check_model_kind(request_kind kind, bool embedding_model);
// The first token id outside the model's vocabulary (a prompt, a continued context, a logit bias key).
request_problem check_token_ids(const llama::model & m, std::span<const llama_token> tokens);
// An empty prompt, else check_token_ids.
request_problem check_prompt(const llama::model & m, std::span<const llama_token> prompt);
// All of the above for one request.
request_problem check_request(const llama::model & m, bool embedding_model, const generation_request & req);

}  // namespace rc::engine
