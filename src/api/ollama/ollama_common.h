#pragma once
// Pieces every Ollama route shares: model lookup and timed loading, keep_alive bookkeeping, Ollama's
// time formats, and JSON / NDJSON responses.
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "api/api_context.h"
#include "http/json_fields.h"
#include "models/local_catalog.h"

namespace rc::api::ollama {
using namespace rc::http;  // written against the HTTP shell (src/http)

using steady = std::chrono::steady_clock;

// RFC 3339 in UTC with nanoseconds, as Go writes time.Time: "2025-06-01T12:00:00.123456789Z".
std::string rfc3339(std::chrono::system_clock::time_point t);
std::string rfc3339_now();
// Ollama durations are integer nanoseconds.
long long ns_from_ms(double ms);
long long ns_since(steady::time_point start);

// Ollama names carry a tag; the loose file demo.gguf is "demo:latest".
std::string display_name(const std::string & catalog_name);

// The request's model name: body["model"], or the deprecated body["name"]; 400 when neither.
std::string model_field(const json & body);

// The catalog entry for `name` — the request's one catalog lookup. 404 "model 'x' not found" for
// unknown names and for names this server cannot hold (bad characters, namespaces it does not
// serve): to a client both mean "pull it first". The name is echoed bounded and printable.
models::model_entry find_model(api_context & ctx, const std::string & name);

// A store model's Modelfile defaults (parameters, system prompt) under what the request gives:
// its `parameters` fill body["options"] where the request has no value; returns its system prompt.
std::optional<std::string> apply_model_defaults(const models::model_entry & entry, json & body);

// As in Ollama, a request without keep_alive resets the model to the server's default.
std::chrono::nanoseconds keep_alive_or_default(const api_context & ctx, std::optional<std::chrono::nanoseconds> keep_alive);

// The whole answer to an empty prompt (generate) or empty messages (chat): load the model, or with
// keep_alive 0 unload it; `reply` holds the shape's empty content field ("response" or "message").
// `name` is the model as the client named it (echoed).
http_response load_or_unload(api_context & ctx, const models::model_entry & entry, const std::string & name,
                             std::optional<std::chrono::nanoseconds> keep_alive, json reply);

http_response json_response(const json & body, int status = 200);
// One NDJSON line.
std::string ndjson(const json & j);

}  // namespace rc::api::ollama
