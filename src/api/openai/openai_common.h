#pragma once
// Pieces shared by the OpenAI routes: request fields → engine request, usage and logprobs objects,
// ids, SSE framing.
#include <string>

#include "api/api_context.h"
#include "api/json_fields.h"
#include "engine/engine.h"

namespace rc::api::openai {

// Reads temperature, top_p, seed, penalties, logit_bias, stop, max_tokens / max_completion_tokens,
// plus llama.cpp extensions (top_k, min_p, typical_p, repeat_penalty) into `req`.
void read_generation_params(const json & body, const api_context & ctx, const llama::model & m,
                            engine::generation_request & req);

// 1..16 choices per request.
int read_n(const json & body);

json usage_json(const engine::usage_stats & u);
// OpenAI chat logprobs entry for one token: {token, logprob, bytes, top_logprobs}.
json chat_logprob_json(const engine::token_choice & c);

std::string make_id(const char * prefix);  // e.g. "chatcmpl-3f9a…"
long long unix_now();

// One SSE event: "data: <json>\n\n".
std::string sse(const json & j);

// The engine for body["model"]; 400 when absent, 404 when unknown, loads when not loaded.
std::shared_ptr<engine::engine> acquire_model(api_context & ctx, const json & body);

}  // namespace rc::api::openai
