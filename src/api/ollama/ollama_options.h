#pragma once
// Ollama request fields that shape generation: `options` (sampling, num_predict, stop), `format`,
// `think` and `logprobs`. Each throws a 400 naming the field on a wrong type or value.
#include <optional>
#include <string>

#include "api/api_context.h"
#include "http/json_fields.h"
#include "engine/request.h"

namespace rc::api::ollama {
using namespace rc::http;  // written against the HTTP shell (src/http)

// body["options"] → req.sampling, req.max_tokens, req.stop. Load-time options (num_ctx, num_gpu, …)
// are type-checked and ignored: the server's context and placement are set at `serve`, and one
// loaded model serves every client.
void read_options(const json & body, const api_context & ctx, engine::generation_request & req);

// body["format"]: absent, null or "" → no constraint (empty); "json" → any JSON object; an object →
// that JSON schema. Returns the schema as JSON text.
std::string read_format(const json & body);

// body["think"]: nullopt when unset; true/false, or "high"/"medium"/"low"/"max" (meaning true).
std::optional<bool> read_think(const json & body);

// body["logprobs"], body["top_logprobs"] → the engine's logprobs_top (-1: none).
int read_logprobs(const json & body);

// The bool field `key`, defaulting to `fallback` (stream defaults to true in Ollama).
bool read_bool(const json & body, const char * key, bool fallback);

}  // namespace rc::api::ollama
