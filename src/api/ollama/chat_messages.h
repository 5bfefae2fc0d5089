#pragma once
// Ollama chat messages and tools → llama.cpp's common_chat_msg / common_chat_tool. Ollama's shapes
// differ from OpenAI's in small ways (tool-call arguments are objects, tool results name the tool
// with tool_name, reasoning is `thinking`), so each message is rewritten into the OpenAI shape and
// handed to the same reader the OpenAI routes use (api/chat_messages.h).
#include <chat.h>

#include <vector>

#include "api/json_fields.h"

namespace rc::api::ollama {

// body["messages"] → messages; 400 naming messages[i] on a wrong shape, for non-empty `images` (no
// vision models are served) and beyond max_chat_messages. Absent or empty → empty (a load request).
std::vector<common_chat_msg> read_messages(const json & body);

// body["tools"] ([{type:"function", function:{name, description, parameters}}]) → tools; 400 on a
// wrong shape.
std::vector<common_chat_tool> read_tools(const json & body);

}  // namespace rc::api::ollama
