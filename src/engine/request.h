#pragma once
// The one internal request/event schema (ARCHITECTURE.md §1). The OpenAI and Ollama translators both
// produce a `generation_request` and consume `generation_event`s; nothing API-specific lives here.
#include <llama.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/constraint.h"
#include "util/result.h"

namespace rc::engine {

struct sampling_params {
    float temperature = 0.8f;   // <= 0: greedy
    int top_k = 40;             // <= 0: whole vocabulary
    float top_p = 0.95f;
    float min_p = 0.05f;
    float typical_p = 1.0f;
    float repeat_penalty = 1.0f;
    int repeat_last_n = 64;
    float presence_penalty = 0.0f;
    float frequency_penalty = 0.0f;
    std::optional<uint32_t> seed;                           // none: a random seed per request
    std::vector<std::pair<llama_token, float>> logit_bias;  // -inf bans a token
    bool ignore_eos = false;
};

enum class request_kind { generate, embed };

struct generation_request {
    request_kind kind = request_kind::generate;
    std::vector<llama_token> prompt;       // already tokenized (templates applied by the caller)
    sampling_params sampling;
    constraint grammar;                    // JSON schema / GBNF / tool-call grammar
    int max_tokens = -1;                   // -1: until the context is full
    std::vector<std::string> stop;         // stop strings (not included in the output)
    int logprobs_top = -1;                 // -1: no logprobs; 0: chosen token only; N: with N alternatives
    bool normalize_embedding = true;       // embed: L2-normalise the pooled vector
    bool truncate_prompt = false;          // a prompt longer than the context keeps its tail instead of failing
    std::string cache_salt;                // KV tiering isolation (docs/KV_TIERING.md)
    // Prompt positions where a message ends (the system prompt, the history before the reply): a
    // model whose state is kept whole keeps one there, so a conversation that shares them resumes
    // from them (kv_planner::checkpoint_at). Ignored by models kept in blocks.
    std::vector<int> message_boundaries;
};

enum class finish_reason { none, stop, length, cancelled, error };
const char * finish_reason_name(finish_reason r);

struct token_logprob {
    llama_token token = -1;
    std::string text;
    float logprob = 0.0f;
};

struct token_choice {
    token_logprob chosen;
    std::vector<token_logprob> top;  // most likely alternatives, best first
};

struct usage_stats {
    int prompt_tokens = 0;
    int cached_tokens = 0;       // prompt tokens not computed (reused from cache)
    int completion_tokens = 0;
    double queue_ms = 0;         // submit → first scheduled
    double prompt_ms = 0;        // first scheduled → first token
    double generation_ms = 0;    // first token → finish
};

struct generation_event {
    enum class type { text, done, error, embedding };
    type kind = type::text;
    std::string text;                          // text: the next piece of visible output (may be empty)
    std::vector<token_choice> tokens;          // text: tokens behind `text` (logprobs when requested)
    finish_reason finish = finish_reason::none;  // done
    std::string stop_word;                     // done: the stop string that matched, if any
    usage_stats usage;                         // done, embedding
    std::vector<float> embedding;              // embedding
    rc::error error;                           // error: its code and message, as the engine raised it
};

}  // namespace rc::engine
