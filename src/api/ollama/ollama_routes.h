#pragma once
// The Ollama API routes (/api/*). See ../../shared/API.md and README.md in this folder.
#include <vector>

#include "api/api_context.h"
#include "api/http_server.h"

namespace rc::api::ollama {

std::vector<route> all_routes(api_context & ctx);

}  // namespace rc::api::ollama
