#pragma once
// Liveness/readiness (NIM-style and llama-server's /health) and version endpoints. Always public.
#include <vector>

#include "api/api_context.h"
#include "http/http_server.h"

namespace rc::api {
using namespace rc::http;  // written against the HTTP shell (src/http)

std::vector<route> health_routes(api_context & ctx);

}  // namespace rc::api
