#pragma once
// The Ollama API routes (/api/*). See ../../shared/API.md and README.md in this folder.
#include <vector>

#include "api/api_context.h"
#include "api/http_server.h"

namespace rc::api::ollama {

std::vector<route> all_routes(api_context & ctx);

// The route groups all_routes assembles (one file each).
route generate_route(api_context & ctx);          // generate.cpp
route chat_route(api_context & ctx);              // chat.cpp
std::vector<route> embed_routes(api_context & ctx);   // embed.cpp: /api/embed, /api/embeddings
std::vector<route> model_routes(api_context & ctx);   // model_routes.cpp: /api/tags, /api/show, /api/ps
std::vector<route> store_routes(api_context & ctx);   // store_routes.cpp: pull, push, create, copy, delete, blobs

}  // namespace rc::api::ollama
