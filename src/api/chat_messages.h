#pragma once
// Chat messages and tools in OpenAI's JSON shape — the shape llama.cpp's common parser reads — into
// what the chat template renders. The OpenAI chat route and llama-server's /apply-template and
// /v1/kv/prefetch send this shape; the Ollama routes convert theirs to it first.
#include <chat.h>

#include <string>
#include <vector>

#include "http/json_fields.h"

namespace rc::api {
using namespace rc::http;  // written against the HTTP shell (src/http)

// `messages` (an array of {role, content (string or content parts), tool_calls, tool_call_id, name})
// → messages. Roles: system, developer (read as system: every template renders that), user,
// assistant, tool. 400 naming `field` for a wrong shape, an empty list, more than
// max_chat_messages (checked before anything else is read), or a tool call whose `arguments` string
// holds JSON past the body's bounds (check_json_text).
std::vector<common_chat_msg> read_chat_messages(const json & messages, const std::string & field = "messages");

// Most tools a request may offer: each is rendered into the prompt and compiled into the tool-call
// grammar, so 10,000 took minutes; 256 is more than any model is trained to choose among.
inline constexpr size_t max_chat_tools = 256;

// `tools` ([{type:"function", function:{name, description, parameters}}]) → tools; 400 naming `field`
// (also for more than max_chat_tools).
std::vector<common_chat_tool> read_chat_tools(const json & tools, const std::string & field = "tools");

}  // namespace rc::api
