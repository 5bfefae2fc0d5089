#pragma once
// The prompt a request body names, as its route would submit it: the tokens, and the cache salt its
// KV block keys chain from. One function serves the host's POST /v1/kv/lookup and the fleet
// gateway's own key chains (a vocab-only load of the same model, gateway/prompt_keys.h), so the
// gateway computes the keys a host computes by construction, not by a second implementation.
#include <llama.h>

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/render_memo.h"
#include "llama/model.h"
#include "models/local_catalog.h"

namespace rc::api {

// The GGUF key under which GET /v1/kv/vocab carries the catalog entry's Modelfile defaults (JSON:
// name, parameters, system, template) — everything read_request_prompt reads besides the body.
inline constexpr std::string_view vocab_entry_key = "rustycage.model_entry";

struct request_prompt {
    std::vector<llama_token> tokens;
    std::string cache_salt;
};

// `api`: "openai" — chat `messages` (/v1/chat/completions) or a completions `prompt` (of a list, the
// first) — "responses" — `instructions` and `input` (/v1/responses) — or "ollama" — chat `messages`
// or a generate `prompt`, with the entry's Modelfile defaults (system prompt, template). The body is
// read by that route's own readers and rendered by the session's render_prompts, bounded by an
// `n_ctx`-token context. Throws api_error 400 where that route would (a malformed field, an empty
// prompt). A chat renders through `memo` where given (the same text, kept by the conversation's
// shape: engine/render_memo.h).
request_prompt read_request_prompt(const models::model_entry & entry, const llama::model & m, int n_ctx, nlohmann::ordered_json & body, const std::string & api,
                                   engine::render_memo * memo = nullptr);

}  // namespace rc::api
