#pragma once
// Which host serves a request: a pure planner (no I/O, no clock), so every branch is unit-tested.
// Inputs: the candidate hosts (up, serving the model), each with its load and — when it answered
// in time — its KV lookup; out: every candidate, best first (failover walks down the list), and why
// the first was chosen.
//
// The cache policy scores each candidate h (docs/GATEWAY.md has the reasoning):
//
//   cached(h) = (w_context·ctx + w_host·host + w_disk·disk) / prompt_tokens     answered lookup
//             = w_affinity · affinity(h)                                       no answer in time
//   score(h)  = cached(h) − w_load · busy(h) / slots(h) − (model loaded on h ? 0 : w_unloaded)
//
// busy(h) is the larger of the gateway's own in-flight requests to h and what h last reported
// (running + queued). Both terms are fractions, so one rule reads plainly: a host is worth its
// cached share of the prompt minus its occupied share of its slots. A host holding a whole prompt
// in context is therefore chosen over an idle one only while fewer than w_load⁻¹ · slots requests
// occupy it; beyond that the next request goes elsewhere, computes the prefix there and makes a
// second holder — a hot conversation (or shared prefix) spreads instead of piling onto one host.
// Ties go to the less busy host, then (cache policy) to the host the gateway has sent the least
// prompt text (prefix_index::held), then to a per-request hash (rendezvous), so equal hosts share.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rc::gateway {

enum class route_policy { cache, least_loaded, round_robin };

// "cache" | "least-loaded" | "round-robin" → the policy; nullopt otherwise.
std::optional<route_policy> parse_route_policy(const std::string & name);
const char * policy_name(route_policy p);

// A host's answer to POST /v1/kv/lookup.
struct kv_answer {
    bool loaded = true;  // false: the model is not loaded there (nothing cached; a load to wait for)
    int prompt_tokens = 0;
    int context = 0, host = 0, disk = 0;
};

struct route_candidate {
    std::string id;
    int busy = 0;   // requests occupying it (see above)
    int slots = 4;  // sequences it decodes at once
    bool model_loaded = true;         // as its host record says (a lookup answer overrides it)
    std::optional<kv_answer> lookup;  // absent: not asked, timed out or failed
    double affinity = 0;              // 0..1: the share of this request's prompt the gateway last sent to it
    size_t held = 0;                  // prompt text the gateway remembers sending it (prefix_index::held)
};

struct route_weights {
    double context = 1.0, host = 0.85, disk = 0.6;  // a cached token's worth by tier (a recomputed one is 1)
    double affinity = 0.75;  // a remembered prefix without a lookup answer: likely still there, tier unknown
    double load = 1.0;       // what a fully occupied host costs, in shares of a prompt
    double unloaded = 1.0;   // what waiting for a model load costs
};

// Why the first host was chosen (the metrics' `reason` label).
//   cache_context | cache_host | cache_disk   its lookup reported cached tokens (the tier holding most of them)
//   affinity                                  no lookup answer in time; the gateway had sent it this prefix
//   load                                      nothing cached anywhere that mattered: the least busy host
//   round_robin                               the round-robin policy
//   only                                      a single candidate
// Failover attempts down the list are counted as "failover" by the caller.
struct route_plan {
    std::vector<std::string> order;  // every candidate, best first
    std::string reason;
    std::vector<double> scores;      // parallel to order (cache policy; else load share, negated)
};

// `spread`: a per-request value (a hash of the conversation) that breaks ties; `turn`: a counter
// that advances with every request (round-robin). An empty candidate list gives an empty plan.
route_plan plan_route(route_policy policy, const std::vector<route_candidate> & candidates, const route_weights & w, uint64_t spread,
                      uint64_t turn);

// The cached share of the prompt the cache policy credits a candidate with (first term above).
double cached_share(const route_candidate & c, const route_weights & w);

}  // namespace rc::gateway
