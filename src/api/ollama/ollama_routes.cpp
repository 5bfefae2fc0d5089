#include "api/ollama/ollama_routes.h"

namespace rc::api::ollama {

std::vector<route> all_routes(api_context &) { return {}; }

}  // namespace rc::api::ollama
