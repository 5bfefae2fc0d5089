#pragma once
// Pieces shared by the OpenAI routes: request fields → the session's input, usage and logprobs
// objects, ids, and the SSE framing of chunk streams.
#include <initializer_list>
#include <string>

#include "api/api_context.h"
#include "http/json_fields.h"
#include "api/generation_session.h"
#include "engine/chat_format.h"
#include "engine/request.h"

namespace rc::api::openai {
using namespace rc::http;  // written against the HTTP shell (src/http)

// Reads temperature, top_p, seed, penalties, logit_bias, stop, cache_salt, plus llama.cpp's
// extensions (top_k, min_p, typical_p, repeat_penalty) into `req`. logit_bias keys must be token
// ids (integers below 2^31; the vocabulary is the session's check).
void read_sampling(const json & body, engine::generation_request & req);

// The request readers of /v1/chat/completions (messages, tools, tool_choice, response_format,
// reasoning_effort) and /v1/completions (a string, strings, token ids or lists of them); POST
// /v1/kv/lookup reads a prompt with them too.
engine::chat_input read_chat(const json & body);        // chat_completions.cpp
std::vector<prompt_input> read_prompts(const json & body);  // completions.cpp

// The first of `fields` present (max_completion_tokens before max_tokens; max_output_tokens for
// Responses) within 1..the server's cap; absent: the server's default. 400 naming that field.
int read_max_tokens(const json & body, const api_context & ctx, std::initializer_list<const char *> fields);

// 1..16 choices per request.
int read_n(const json & body);

// stream_options.include_usage; 400 when stream_options is not an object or the flag not a bool.
bool read_include_usage(const json & body);

json usage_json(const engine::usage_stats & u);
// OpenAI chat logprobs entry for one token: {token, logprob, bytes, top_logprobs}.
json chat_logprob_json(const engine::token_choice & c);

std::string make_id(const char * prefix);  // e.g. "chatcmpl-3f9a…"
long long unix_now();

// One SSE event: "data: <json>\n\n".
std::string sse(const json & j);
// An SSE comment: what a quiet stream sends to show it is alive (clients skip it).
inline std::string sse_keep_alive() { return ": keep-alive\n\n"; }

// The chunks of one chat.completion.chunk / text_completion stream share everything but their
// choices: the head is written once, so a chunk costs one small dump.
class chunk_framing {
  public:
    chunk_framing(const std::string & id, const char * object, long long created, const std::string & model, bool fingerprint);
    std::string choice(const json & c) const;      // data: {..., "choices":[c]}
    // The stream's end: with `usage`, a chunk {..., "choices":[], "usage":usage}; then data: [DONE].
    std::string end(const json * usage) const;

  private:
    std::string head_;  // `data: {"id":…,"choices":[`
};

}  // namespace rc::api::openai
