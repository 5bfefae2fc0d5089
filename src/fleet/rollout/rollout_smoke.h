#pragma once
// The rollout's smoke test of a server, for real, over its public routes: ready
// (/v1/health/ready), each model loaded and answering — a chat completion, or an embedding for a
// model whose /api/show capabilities say "embedding" —, and /metrics parsing as Prometheus text
// with Rustycage's own series. A server that starts but cannot load its models, answers garbage or
// has no metrics fails it.
//
// Contract: bounded by `timeout` per call; a failure is a value (the first thing that failed, for
// people and for the incident), never an error. Any thread.
#include <chrono>
#include <string>
#include <vector>

namespace rc::fleet {

struct smoke_report {
    bool passed = false;
    std::string failure;               // empty when passed
    std::vector<std::string> checked;  // "ready", "chat tiny", "embedding e5", "metrics"
};

smoke_report smoke_server(const std::string & openai_url, const std::vector<std::string> & models, const std::string & api_key,
                          std::chrono::milliseconds timeout);

}  // namespace rc::fleet
