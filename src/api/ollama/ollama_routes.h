#pragma once
// The Ollama API routes (/api/*). See ../../shared/API.md and README.md in this folder.
#include <vector>

#include "api/api_context.h"
#include "api/generation_session.h"
#include "http/http_server.h"

namespace rc::api::ollama {
using namespace rc::http;  // written against the HTTP shell (src/http)

std::vector<route> all_routes(api_context & ctx);

// The route groups all_routes assembles (one file each).
route generate_route(api_context & ctx);          // generate.cpp
route chat_route(api_context & ctx);              // chat.cpp
std::vector<route> embed_routes(api_context & ctx);   // embed.cpp: /api/embed, /api/embeddings
std::vector<route> model_routes(api_context & ctx);   // model_routes.cpp: /api/tags, /api/show, /api/ps
std::vector<route> store_routes(api_context & ctx);   // store_routes.cpp: pull, push, create, copy, delete, blobs

// The request readers of /api/chat and /api/generate: the prompt-shaping fields of `body` (the
// model's Modelfile defaults applied) into `in` — messages, system, tools, format, think; for
// generate also raw and context. read_generate_request returns false for an empty prompt (a load
// or unload). POST /v1/kv/lookup reads an Ollama prompt with them too. 400 for a malformed field.
void read_chat_request(const models::model_entry & entry, json & body, generation_input & in);      // chat.cpp
bool read_generate_request(const models::model_entry & entry, json & body, generation_input & in);  // generate.cpp

}  // namespace rc::api::ollama
