#pragma once
// The routes the gateway forwards to one host: every generation, embedding and model-specific route
// of a host (chat, completions, responses, embeddings, Ollama generate/chat/embed/show, the
// llama-server conveniences, the KV prefetch hint). Each request goes to the best `up` host that
// serves its model (route_planner.h), is retried on the next one when a host fails before its
// first byte, and is relayed chunk by chunk once it streams.
//
// Also POST /v1/kv/lookup on the gateway: the same lookups the router makes, answered with every
// candidate's reply, its score and the host the gateway would choose (for people and benchmarks).
#include <vector>

#include "gateway/gateway_context.h"

namespace rc::gateway {

std::vector<http::route> proxy_routes(gateway_context & g);

}  // namespace rc::gateway
