#pragma once
// Ollama chat messages and tools → llama.cpp's common_chat_msg / common_chat_tool. Messages are
// read straight into common_chat_msg (tool-call arguments are objects, tool results name the tool
// with tool_name, reasoning is `thinking`); tools have OpenAI's shape and go through the reader the
// OpenAI routes use (api/chat_messages.h).
#include <chat.h>

#include <vector>

#include "http/json_fields.h"

namespace rc::api::ollama {
using namespace rc::http;  // written against the HTTP shell (src/http)

// body["messages"] → messages; 400 naming messages[i] on a wrong shape, for non-empty `images` (no
// vision models are served) and beyond max_chat_messages. Absent or empty → empty (a load request).
std::vector<common_chat_msg> read_messages(const json & body);

// body["tools"] ([{type:"function", function:{name, description, parameters}}]) → tools; 400 on a
// wrong shape.
std::vector<common_chat_tool> read_tools(const json & body);

}  // namespace rc::api::ollama
