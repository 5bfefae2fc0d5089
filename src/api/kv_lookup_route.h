#pragma once
// POST /v1/kv/lookup — how many of a request's prompt tokens this server holds KV for, and in which
// tier, without changing anything (the fleet gateway asks every candidate host before routing;
// docs/GATEWAY.md). The body is the request as a client would send it:
//
//   {"model":"demo", "messages":[…] | "prompt":"text" | "prompt":[ids], "cache_salt":"…",
//    "tools":[…], "api":"openai"|"ollama", "timeout_ms":1000}
//
// `api` picks the route whose readers read the body: "openai" (default: /v1/chat/completions with
// messages, /v1/completions with prompt — the first of a list) or "ollama" (/api/chat, /api/generate
// with `system`, `raw`, `context`, `think` and the model's Modelfile defaults); the session's
// render_prompts renders and tokenizes it, so the tokens are the ones that route would submit, with
// the cache salt it would pass (OpenAI's `cache_salt`; Ollama has none). A field that route refuses
// is refused here the same way (400 naming it) — except what only generation builds: the render is
// the prompt alone (engine::chat_input::prompt_only), so a tool_choice or response_format the
// template cannot enforce is refused by the generation, not by its lookup. The answer:
//
//   {"model":"demo", "loaded":true, "prompt_tokens":812, "cached_tokens":768,
//    "tiers":{"context":512,"host":256,"disk":0}, "load":{"running":1,"queued":0,"slots":4}}
//
// A model that is not loaded is not loaded by a lookup: "loaded": false, nothing cached, no
// prompt_tokens (tokenizing needs the model). `load` is the whole server's: running sequences and
// queued requests over every loaded model, and the sequences one model runs at once (--parallel).
// 400 on a malformed body or field, an empty prompt, or an embedding model; 404 for an unknown
// model; 503 when the engine did not answer within timeout_ms (default 1000, 1..10000). A lookup
// holds the model only while it asks (models::model_manager::peek: not a use, keep_alive runs on).
#include <vector>

#include <nlohmann/json.hpp>

#include "api/api_context.h"
#include "http/http_server.h"

namespace rc::api {
using namespace rc::http;  // written against the HTTP shell (src/http)

std::vector<route> kv_lookup_routes(api_context & ctx);

// The whole server's load as `load` above reads: {"running":R,"queued":Q,"slots":S} (also on every
// KV event, api/kv_events_route.h).
nlohmann::ordered_json server_load(api_context & ctx);

}  // namespace rc::api
