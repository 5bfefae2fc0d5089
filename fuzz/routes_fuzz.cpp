// Request bodies through the translators of every generating route family (OpenAI chat,
// completions, responses, embeddings; Ollama generate, chat, embed, show; the llama-server
// conveniences): the real handlers of a server with an empty models directory. A body a route
// reads whole ends in its catalog lookup (404: no such model); one it refuses ends in a 4xx naming
// the field. A 5xx, any other exception, a crash, a leak or UB is a finding.
//
// Input: the route's path, a newline, the body ("/v1/chat/completions\n{...}"). A path that names
// no route below picks one by its bytes, so mutations of the path still reach every route.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "api/api_context.h"
#include "http/api_error.h"
#include "api/api_server.h"
#include "models/model_manager.h"

namespace {

// POST routes that read a request body and only read state (no store writes, no Hub traffic).
constexpr std::string_view k_paths[] = {
    "/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/embeddings", "/api/generate", "/api/chat",
    "/api/embed",           "/api/embeddings", "/api/show",     "/tokenize",      "/detokenize",   "/apply-template",
    "/v1/kv/prefetch",
};

struct server {
    std::filesystem::path dir;
    std::unique_ptr<rc::models::model_manager> models;
    std::unique_ptr<rc::api::api_context> ctx;
    std::vector<rc::http::route> routes;  // one per k_paths entry, in its order

    server() {
        char tmpl[] = "/tmp/rustycage-fuzz-routes-XXXXXX";
        if (!mkdtemp(tmpl)) std::abort();
        dir = tmpl;
        models = std::make_unique<rc::models::model_manager>(rc::models::local_catalog(dir), rc::engine::engine_options{},
                                                              rc::llama::model_load_options{});
        ctx = std::make_unique<rc::api::api_context>(rc::api::api_context{*models, {}});
        auto all = rc::api::all_routes(*ctx);
        for (auto path : k_paths) {
            for (auto & r : all)
                if (r.method == "POST" && r.pattern == path && r.handler) routes.push_back(r);
        }
        if (routes.size() != std::size(k_paths)) std::abort();  // a route was renamed: update k_paths
    }
    ~server() {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    static server s;
    std::string_view in(reinterpret_cast<const char *>(data), size);
    const size_t nl = in.find('\n');
    const std::string_view path = nl == std::string_view::npos ? std::string_view() : in.substr(0, nl);
    size_t pick = 0;
    for (unsigned char c : path) pick = pick * 31 + c;
    pick %= std::size(k_paths);
    for (size_t i = 0; i < std::size(k_paths); ++i)
        if (k_paths[i] == path) pick = i;

    rc::http::http_request req;
    req.method = "POST";
    req.path = std::string(k_paths[pick]);
    req.route = req.path;
    req.body = std::string(nl == std::string_view::npos ? in : in.substr(nl + 1));
    req.headers["content-type"] = "application/json";
    req.client_gone = [] { return false; };
    try {
        rc::http::http_response r = s.routes[pick].handler(req);
        if (r.status >= 500) __builtin_trap();
    } catch (const rc::http::api_error & e) {
        if (e.status < 400 || e.status >= 500) __builtin_trap();
    }
    return 0;
}
