#pragma once
// The API process surface: one route table served on two listeners (OpenAI's default port and
// Ollama's), with the cross-cutting pieces every route shares: the error barrier, API-key auth,
// CORS and the access log.
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "api/api_context.h"
#include "http/http_server.h"
#include "http/request_guard.h"
#include "http/server_shell.h"
#include "api/ui/ui_routes.h"
#include "util/result.h"

namespace rc::api {
using namespace rc::http;  // written against the HTTP shell (src/http)

// Where to listen, and the limits of every listener (server_shell.h).
struct listen_options : shell_limits {
    std::string host = "127.0.0.1";
    int openai_port = 8080;   // 0: any free port
    int ollama_port = 11434;  // 0: any free port; -1: no second listener
};

class api_server {
  public:
    // `fleet` feeds the console's Fleet page (ui/ui_routes.h); none: the server runs standalone.
    api_server(models::model_manager & models, api_options opts, ui::fleet_source fleet = nullptr);
    ~api_server();

    // Binds both ports and starts serving on background threads. Errors: io; invalid_argument for
    // API keys check_api_keys() refuses.
    status start(const listen_options & listen);
    void stop();
    // Ends every generation still running (each answers 503, a stream with its error event), so
    // that a stop() waiting for them returns. For a shutdown whose grace period is over.
    void end_requests();
    // Not ready until cleared (serve --preload): the health routes answer 503 with its text.
    startup_gate & startup() { return *ctx_.startup; }
    int openai_port() const { return openai_port_; }
    int ollama_port() const { return ollama_port_; }

  private:
    api_context ctx_;
    ui::fleet_source fleet_;
    listeners listeners_;
    int openai_port_ = -1;
    int ollama_port_ = -1;
};

// The full route table (exposed for tests).
std::vector<route> all_routes(api_context & ctx, const ui::fleet_source & fleet = nullptr);
// GET /metrics and /v1/metrics: the Prometheus text exposition of ctx.metrics.
std::vector<route> metrics_routes(api_context & ctx);

}  // namespace rc::api
