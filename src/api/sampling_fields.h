#pragma once
// The sampling fields both dialects read, in one table: the engine field each one sets and the range
// each dialect accepts — OpenAI's documented ranges; Ollama's `options`, which accept wider ones
// (temperature up to 100, top_k -1) and a few more fields (repeat_last_n). A value out of range is a
// 400 naming the field. Dialect-only fields (OpenAI's logit_bias, Ollama's num_predict) stay with
// their dialect.
#include "engine/request.h"
#include "http/json_fields.h"

namespace rc::api {

enum class sampling_dialect { openai, ollama };

// `fields` (an OpenAI body, or Ollama's `options` object) → `s`, for every field of the table that
// is present and not null. The seed: OpenAI takes any 64-bit integer (its low 32 bits); Ollama's -1
// (any negative) means a fresh random seed per request, as in Ollama.
void read_sampling_fields(const http::json & fields, sampling_dialect dialect, engine::sampling_params & s);

}  // namespace rc::api
