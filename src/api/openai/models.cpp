// GET /v1/models and /v1/models/{id}: every servable model, loaded or not.
#include <chrono>

#include "http/api_error.h"
#include "api/openai/openai_common.h"
#include "api/openai/openai_routes.h"
#include "util/safe_quote.h"

namespace rc::api::openai {
using namespace rc::http;  // written against the HTTP shell (src/http)

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
             const std::string & id = req.path_params.at("id");
             auto e = ctx.models.catalog().find(id);
             if (!e) raise(e.err());
             // A quarantined or failed model is not offered by the list, so it is not found here either.
             if (!e->servable()) throw api_error(404, "model " + safe_quote(id) + " not found");
             http_response r;
             r.body = dump(model_json(e.value()));
             return r;
         }},
    };
}

}  // namespace rc::api::openai
