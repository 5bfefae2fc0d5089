// GET /v1/models and /v1/models/{id}: every servable model, loaded or not.
#include <chrono>

#include "api/api_error.h"
#include "api/openai/openai_common.h"
#include "api/openai/openai_routes.h"

namespace rc::api::openai {

namespace {

json model_json(const models::model_entry & e) {
    auto secs = std::chrono::duration_cast<std::chrono::seconds>(e.modified.time_since_epoch()).count();
    return json{{"id", e.name}, {"object", "model"}, {"created", secs}, {"owned_by", "rustycage"}};
}

}  // namespace

std::vector<route> models_routes(api_context & ctx) {
    return {
        {"GET", "/v1/models",
         [&ctx](const http_request &) {
             json data = json::array();
             for (const auto & e : ctx.models.catalog().list())
                 if (e.servable()) data.push_back(model_json(e));  // quarantined models are not offered
             http_response r;
             r.body = dump(json{{"object", "list"}, {"data", data}});
             return r;
         }},
        {"GET", "/v1/models/:id",
         [&ctx](const http_request & req) {
             auto e = ctx.models.catalog().find(req.path_params.at("id"));
             if (!e) raise(e.err());
             http_response r;
             r.body = dump(model_json(e.value()));
             return r;
         }},
    };
}

}  // namespace rc::api::openai
