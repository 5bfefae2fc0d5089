#pragma once
// The operator's web console (README.md in this folder). Two kinds of routes:
//
//   GET /ui, /ui/…            the pages: files of web/ and the pinned uPlot, embedded in the binary at
//                             build time (ui_assets.h). Public like /health — they hold no data, and the
//                             page must load before it can ask for the API key. ETag + no-cache, so an
//                             upgraded binary is picked up on the next load; a CSP that allows only
//                             this origin, so the browser never fetches anything from elsewhere.
//   GET /v1/console/server    facts no other route reports: version, uptime, memory budget and use,
//                             the engine settings, each loaded model's load / last-use times.
//   GET /v1/console/fleet     the fleet document (shape in README.md) from `fleet_source`, or
//                             {"configured": false, ...} when the server runs standalone.
//
// The data routes sit behind the API key like every data route. Everything else the console shows
// comes from existing routes (/api/tags, /api/ps, /metrics, /v1/chat/completions).
#include <functional>
#include <string_view>
#include <vector>

#include "api/api_context.h"
#include "http/http_server.h"
#include "http/json_fields.h"
#include "util/result.h"

namespace rc::api::ui {
using namespace rc::http;  // written against the HTTP shell (src/http)

// Produces the fleet document (README.md: "Fleet data"). An error is shown on the Fleet page as
// "fleet unreachable: <message>" (answered 200 with configured: true, error: message, so the page
// keeps its last good picture). Called on an HTTP thread for every poll of the page (every few
// seconds per open console); must be thread-safe and should answer from a cache.
using fleet_source = std::function<result<json>()>;

// True for the console's static pages (/ui and everything below it), which need no API key.
bool is_static_path(std::string_view path);

std::vector<route> ui_routes(api_context & ctx, fleet_source fleet = nullptr);

}  // namespace rc::api::ui
