// The model-store routes (pull, push, create, copy, delete, blobs). Models today are loose GGUF
// files in the models directory; until the model-store issue lands these answer a clear 501 in
// Ollama's error shape, so clients report "not implemented" instead of a bare 404 route miss.
#include "api/api_error.h"
#include "api/ollama/ollama_routes.h"

namespace rc::api::ollama {

namespace {

http_handler not_yet(const std::string & what) {
    return [what](const http_request &) -> http_response {
        throw api_error(501, what + " is not implemented yet (model store pending); put GGUF files in the models directory instead");
    };
}

}  // namespace

std::vector<route> store_routes(api_context &) {
    return {
        {"POST", "/api/pull", not_yet("/api/pull")},
        {"POST", "/api/push", not_yet("/api/push")},
        {"POST", "/api/create", not_yet("/api/create")},
        {"POST", "/api/copy", not_yet("/api/copy")},
        {"DELETE", "/api/delete", not_yet("/api/delete")},
        {"HEAD", "/api/blobs/:digest", not_yet("/api/blobs")},
        {"POST", "/api/blobs/:digest", not_yet("/api/blobs")},
    };
}

}  // namespace rc::api::ollama
