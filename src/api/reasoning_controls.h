#pragma once
// The reasoning controls a request may carry, as llama-server reads them, into the chat input
// (docs/MODELS.md "Reasoning controls"):
// * `chat_template_kwargs`: an object; every entry becomes a variable of the chat template (as JSON).
//   `enable_thinking` there must be a boolean, and switches the template's thinking like `think`.
// * `reasoning_effort` ("none", "minimal", "low", "medium", "high"; the Responses API's
//   `reasoning.effort` alike): "none" turns thinking off, the others reach the template as
//   `reasoning_effort` (gpt-oss reads it).
// * `reasoning_format` ("none", "auto", "deepseek", "deepseek-legacy"): how reasoning is split
//   from the reply; "none" leaves it inline in `content`.
// Bad values are a 400 naming the field; nothing else in the request changes.
#include "http/json_fields.h"
#include "engine/chat_format.h"

namespace rc::api {
using namespace rc::http;  // written against the HTTP shell (src/http)

// Most template variables one request may set (each is rendered with the template), and their
// JSON text in all: they are switches, not content (a 30 MB `messages` there bypassed the prompt's
// own limits).
inline constexpr size_t max_template_kwargs = 64;
inline constexpr size_t max_template_kwargs_bytes = size_t{64} << 10;

void read_reasoning_controls(const json & body, engine::chat_input & in);

// Ollama's `think` as a level ("low", "medium", "high", "max": thinking on, read_think) also reaches
// the template as `reasoning_effort`. A boolean or no `think` sets nothing here.
void read_ollama_think_level(const json & body, engine::chat_input & in);

}  // namespace rc::api
