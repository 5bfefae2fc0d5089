#include "engine/request_checks.h"

namespace rc::engine {

std::string request_problem::message() const {
    switch (what) {
        case kind::none: break;
        case kind::embedding_model: return "model is an embedding model; it cannot generate text";
        case kind::text_model: return "model does not produce embeddings (it is a text generation model)";
        case kind::empty_prompt: return "prompt is empty";
        case kind::token_outside_vocabulary: return "token " + std::to_string(token) + " is outside the vocabulary";
    }
    return {};
}

request_problem check_model_kind(request_kind kind, bool embedding_model) {
    if (kind == request_kind::generate && embedding_model) return {request_problem::kind::embedding_model};
    if (kind == request_kind::embed && !embedding_model) return {request_problem::kind::text_model};
    return {};
}

request_problem check_token_ids(const llama::model & m, std::span<const llama_token> tokens) {
    for (llama_token t : tokens) {
        if (!m.valid_token(t)) return {request_problem::kind::token_outside_vocabulary, t};
    }
    return {};
}

request_problem check_prompt(const llama::model & m, std::span<const llama_token> prompt) {
    if (prompt.empty()) return {request_problem::kind::empty_prompt};
    return check_token_ids(m, prompt);
}

request_problem check_request(const llama::model & m, bool embedding_model, const generation_request & req) {
    if (auto p = check_model_kind(req.kind, embedding_model)) return p;
    if (auto p = check_prompt(m, req.prompt)) return p;
    for (const auto & [token, bias] : req.sampling.logit_bias) {
        if (auto p = check_token_ids(m, std::span<const llama_token>(&token, 1))) return p;
    }
    return {};
}

}  // namespace rc::engine
