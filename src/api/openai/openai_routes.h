#pragma once
// The OpenAI v1 routes. Each returns its route bound to the shared api_context.
#include <vector>

#include "api/api_context.h"
#include "http/http_server.h"

namespace rc::api::openai {
using namespace rc::http;  // written against the HTTP shell (src/http)

route chat_completions_route(api_context & ctx);
route completions_route(api_context & ctx);
route embeddings_route(api_context & ctx);
route responses_route(api_context & ctx);
std::vector<route> models_routes(api_context & ctx);

inline std::vector<route> all_routes(api_context & ctx) {
    std::vector<route> r = models_routes(ctx);
    r.push_back(chat_completions_route(ctx));
    r.push_back(completions_route(ctx));
    r.push_back(embeddings_route(ctx));
    r.push_back(responses_route(ctx));
    return r;
}

}  // namespace rc::api::openai
