#pragma once
// Embeddings for both dialects (/v1/embeddings, /api/embed, /api/embeddings): every input through
// the engine, a window at a time, so a request with more inputs than the engine's queue holds
// (2,048 are accepted, the queue takes 256 by default) is served rather than refused with 503. Only
// when the queue is full of other clients' work before any of this request's inputs is in does
// the request get the 503.
#include <functional>
#include <string>
#include <vector>

#include "api/api_context.h"
#include "api/generation_session.h"
#include "models/model_manager.h"

namespace rc::api {

inline constexpr size_t max_embedding_inputs = 2048;

struct embedding_input {
    std::vector<prompt_input> inputs;  // text (tokenized with the model's special tokens) or token ids
    bool normalize = true;             // L2-normalise each vector
    bool truncate = false;             // longer than the context: keep the head (and the closing token) instead of a 400
    std::string field = "input";       // the client's field, for errors
};

struct embedding_output {
    std::vector<std::vector<float>> vectors;  // in input order
    int prompt_tokens = 0;
};

// `lease` holds an embedding model (the dialect words the refusal of a text model). Throws
// api_error: 400 for empty inputs, ids outside the vocabulary, too-long inputs without truncate;
// 503 when the queue is full of others' work; 499 when the client left.
embedding_output run_embeddings(api_context & ctx, models::model_lease & lease, embedding_input in, const std::function<bool()> & client_alive);

// Matryoshka-style truncation to `dims` components, renormalised to unit length.
void truncate_dimensions(std::vector<float> & v, size_t dims);

}  // namespace rc::api
