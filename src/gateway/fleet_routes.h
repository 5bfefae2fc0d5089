#pragma once
// The routes the gateway answers for the whole fleet rather than forwarding to one host:
// * listings as the union over the up hosts: GET /v1/models, /v1/models/:id, /api/tags, /api/ps
//   (each host asked in parallel; a host that does not answer in time is left out, its record's
//   models stand in for /v1/models and /api/tags);
// * health and identity: /v1/health/live, /v1/health/ready (ready while at least one host is up),
//   /health, /v1/version, /api/version, / ("Ollama is running"), /v1/metadata (the fleet's models);
// * GET /v1/gateway/hosts: the gateway's host table (state, in flight, load, models);
// * /metrics and /v1/metrics: the gateway's own metrics (gateway_metrics.h);
// * the model-store routes (pull, push, create, copy, delete, blobs) answer 501: a store change is
//   a host's business (run it there), the gateway only routes to models hosts already have.
// /ui is left for the fleet console.
#include <vector>

#include "gateway/gateway_context.h"

namespace rc::gateway {

std::vector<http::route> fleet_routes(gateway_context & g);

}  // namespace rc::gateway
