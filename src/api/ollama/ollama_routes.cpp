#include "api/ollama/ollama_routes.h"

namespace rc::api::ollama {

std::vector<route> all_routes(api_context & ctx) {
    std::vector<route> routes = {generate_route(ctx), chat_route(ctx)};
    for (auto * group : {&embed_routes, &model_routes, &store_routes}) {
        for (auto & r : (*group)(ctx)) routes.push_back(std::move(r));
    }
    return routes;
}

}  // namespace rc::api::ollama
