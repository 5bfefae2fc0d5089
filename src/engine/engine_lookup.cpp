// engine::lookup — what a prompt would reuse if it were submitted now, for routers (the fleet
// gateway asks every host before choosing one). It asks the KV planner the admission's own question
// (kv_planner::plan_reuse, a const decision over the context's sequences and the tiers' indexes), on
// the engine thread between steps, and applies nothing: no cells are shared, no block is promoted or
// read, no LRU order, ledger entry or statistic changes.
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

kv_lookup engine::impl::answer_lookup(const std::vector<llama_token> & tokens, const std::string & salt) const {
    // Admission's own question (plan_reuse: context donors first, then blocks below), asked of a
    // prompt that is not a sequence: the planner decides and nothing applies its answer.
    kv_lookup out;
    out.prompt_tokens = static_cast<int>(tokens.size());
    if (!plans()) return out;
    auto views = context_views(true);
    // The prompt's last token is always decoded (its logits start the generation), as in admission.
    kv::key_chain keys = kv_exec->planner().chain(salt);
    const kv::reuse_plan plan = kv_exec->planner().plan_reuse(tokens, keys, out.prompt_tokens - 1, salt, views);
    out.context = plan.from_context;
    for (const auto & b : plan.blocks) (b.tier == kv::tier_name::disk ? out.disk : out.host) += b.keep;
    return out;
}

}  // namespace rc::engine
