// engine::lookup — what a prompt would reuse if it were submitted now, for routers (the fleet
// gateway asks every host before choosing one). It runs the admission's own reuse planner
// (plan_reuse) on a probe sequence, on the engine thread between steps, and applies nothing: no
// cells are shared, no block is promoted or read, no LRU order or statistic changes.
//
// Kept apart from engine_kv.cpp on purpose: when the KV planner replaces plan_reuse, only
// answer_lookup() changes (ask the planner for its plan instead), not the queue around it.
#include "engine/engine_impl.h"

namespace rc::engine {

namespace {

constexpr size_t max_waiting_lookups = 256;

}  // namespace

std::optional<kv_lookup> engine::lookup(std::vector<llama_token> tokens, std::string cache_salt, std::chrono::milliseconds timeout) {
    for (llama_token t : tokens)
        if (!model_->valid_token(t)) return std::nullopt;
    kv_lookup none;
    none.prompt_tokens = static_cast<int>(tokens.size());
    // Embedding requests reuse nothing; a prompt of one token always computes that token.
    if (is_embedding() || tokens.size() < 2) return none;
    auto job = std::make_shared<lookup_job>();
    job->tokens = std::move(tokens);
    job->cache_salt = std::move(cache_salt);
    auto answer = job->answer.get_future();
    {
        std::lock_guard lock(mutex_);
        if (stopping_ || lookups_.size() >= max_waiting_lookups) return std::nullopt;
        lookups_.push_back(std::move(job));
    }
    wake_.notify_one();
    if (answer.wait_for(timeout) != std::future_status::ready) return std::nullopt;
    try {
        return answer.get();
    } catch (const std::future_error &) {
        return std::nullopt;  // the engine stopped with the lookup still queued
    }
}

kv_lookup engine::impl::answer_lookup(const std::vector<llama_token> & tokens, const std::string & salt) {
    sequence probe;
    probe.tokens = tokens;
    probe.n_prompt = static_cast<int>(tokens.size());
    probe.req.cache_salt = salt;
    const reuse_plan plan = plan_reuse(probe);
    kv_lookup out;
    out.prompt_tokens = probe.n_prompt;
    out.context = plan.from_context;
    for (size_t i = 0; i < plan.tier_keys.size(); ++i) {
        if (plan.tier_of[i] == kv::tier_name::host) out.host += plan.tier_tokens[i];
        else if (plan.tier_of[i] == kv::tier_name::disk) out.disk += plan.tier_tokens[i];
        else out.context += plan.tier_tokens[i];
    }
    return out;
}

}  // namespace rc::engine
