#include "gateway/route_planner.h"

#include <algorithm>
#include <numeric>

namespace rc::gateway {

namespace {

// Rendezvous (highest random weight) hashing: each (request, host) pair gets a stable pseudo-random
// rank, so ties spread evenly across hosts and the same conversation keeps the same tie-break.
uint64_t rendezvous(uint64_t spread, const std::string & id) {
    uint64_t h = 1469598103934665603ull ^ spread;
    for (unsigned char c : id) h = (h ^ c) * 1099511628211ull;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

double occupancy(const route_candidate & c) { return static_cast<double>(std::max(0, c.busy)) / std::max(1, c.slots); }

bool loaded(const route_candidate & c) { return c.lookup ? c.lookup->loaded : c.model_loaded; }

std::string tier_reason(const kv_answer & a, const route_weights & w) {
    const double ctx = w.context * a.context, host = w.host * a.host, disk = w.disk * a.disk;
    if (ctx >= host && ctx >= disk) return "cache_context";
    return host >= disk ? "cache_host" : "cache_disk";
}

}  // namespace

std::optional<route_policy> parse_route_policy(const std::string & name) {
    if (name == "cache") return route_policy::cache;
    if (name == "least-loaded") return route_policy::least_loaded;
    if (name == "round-robin") return route_policy::round_robin;
    return std::nullopt;
}

const char * policy_name(route_policy p) {
    switch (p) {
        case route_policy::cache: return "cache";
        case route_policy::least_loaded: return "least-loaded";
        case route_policy::round_robin: return "round-robin";
    }
    return "?";
}

double cached_share(const route_candidate & c, const route_weights & w) {
    if (c.lookup) {
        const auto & a = *c.lookup;
        if (!a.loaded || a.prompt_tokens <= 0) return 0;
        const double worth = w.context * a.context + w.host * a.host + w.disk * a.disk;
        return std::clamp(worth / a.prompt_tokens, 0.0, 1.0);
    }
    return w.affinity * std::clamp(c.affinity, 0.0, 1.0);
}

route_plan plan_route(route_policy policy, const std::vector<route_candidate> & cands, const route_weights & w, uint64_t spread, uint64_t turn) {
    route_plan plan;
    if (cands.empty()) return plan;
    std::vector<size_t> idx(cands.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::vector<double> score(cands.size());

    if (policy == route_policy::round_robin) {
        // Rotate the hosts (sorted by id, so the rotation is stable while the set is) by the turn.
        std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return cands[a].id < cands[b].id; });
        std::rotate(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(turn % idx.size()), idx.end());
        for (size_t i : idx) {
            plan.order.push_back(cands[i].id);
            plan.scores.push_back(-occupancy(cands[i]));
        }
        plan.reason = cands.size() == 1 ? "only" : "round_robin";
        return plan;
    }

    std::vector<uint64_t> tie(cands.size());  // the last tie-break, hashed once per host (not per comparison)
    for (size_t i = 0; i < cands.size(); ++i) {
        score[i] = -w.load * occupancy(cands[i]) - (loaded(cands[i]) ? 0.0 : w.unloaded);
        if (policy == route_policy::cache) score[i] += cached_share(cands[i], w);
        tie[i] = rendezvous(spread, cands[i].id);
    }
    std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
        if (score[a] != score[b]) return score[a] > score[b];
        if (cands[a].busy != cands[b].busy) return cands[a].busy < cands[b].busy;
        // Equally worth and busy (a prompt no host holds, idle hosts): the cache policy places it
        // where the gateway has placed the least, so its context has room for what it will keep —
        // groups of conversations sharing a prefix spread instead of two landing on one host.
        if (policy == route_policy::cache && cands[a].held != cands[b].held) return cands[a].held < cands[b].held;
        return tie[a] > tie[b];
    });
    plan.order.reserve(cands.size());
    plan.scores.reserve(cands.size());
    for (size_t i : idx) {
        plan.order.push_back(cands[i].id);
        plan.scores.push_back(score[i]);
    }
    // The cache decided only if the winner holds more than some other candidate: a prefix every host
    // holds alike (a shared system prompt everywhere) leaves the choice to load.
    const route_candidate & best = cands[idx.front()];
    double least_cached = 1;
    for (const auto & c : cands) least_cached = std::min(least_cached, cached_share(c, w));
    if (cands.size() == 1) plan.reason = "only";
    else if (policy == route_policy::cache && cached_share(best, w) > least_cached) plan.reason = best.lookup ? tier_reason(*best.lookup, w) : "affinity";
    else plan.reason = "load";
    return plan;
}

}  // namespace rc::gateway
