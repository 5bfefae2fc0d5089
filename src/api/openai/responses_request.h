#pragma once
// A POST /v1/responses body read into a generation_input in its own terms (errors name
// `input[2].content`, `text.format`): `instructions` and `input` (a string, or message /
// function_call / function_call_output items) become the chat's messages, with flat function tools,
// `tool_choice`, `text.format`, reasoning controls and sampling. The route and a prefix-cache lookup
// (api/request_prompt.h: the host's POST /v1/kv/lookup, the fleet gateway's key chains) read it alike.
#include "api/generation_session.h"

namespace rc::api::openai {

// Everything that shapes the prompt; `max_output_tokens` and `stream` are the route's.
void read_responses_request(const nlohmann::ordered_json & body, generation_input & in);

}  // namespace rc::api::openai
