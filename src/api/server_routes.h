#pragma once
// Server conveniences that are neither OpenAI nor Ollama: NIM's GET /v1/metadata and llama-server's
// POST /tokenize, /detokenize, /apply-template and GET /props, so tools written for llama-server
// work unchanged. llama-server has one model; here `model` (body, or ?model= for /props) picks one,
// and without it the first loaded model, else the only servable one, is used.
#include <vector>

#include "api/api_context.h"
#include "http/http_server.h"

namespace rc::api {
using namespace rc::http;  // written against the HTTP shell (src/http)

std::vector<route> server_routes(api_context & ctx);

}  // namespace rc::api
