// The step cost model across loads (issue 34): no timed decodes at load (one untimed warm-up). A remembered model is used
// from the first step; without one the model is learned from the first real steps while chunks stay
// one aligned chunk small (scheduler.h). Once it stands on enough steps and differs from what the
// file holds (nothing, or another machine's numbers under a key that still matched), it is stored.
#include <algorithm>
#include <cmath>

#include "engine/engine_impl.h"
#include "util/log.h"

namespace rc::engine {

namespace {

// Off by more than a quarter (and more than `floor` in absolute terms: tiny costs are all noise).
bool differs(double stored, double now, double floor) { return std::abs(stored - now) > std::max(floor, 0.25 * std::max(stored, now)); }

}  // namespace

void engine::impl::warm_up() {
    // One untimed decode of a few tokens in the scratch sequence, as llama-server warms up at load:
    // the first graph's allocations and the first touch of every weight page are paid here, inside
    // the load (before a preloading server says ready), not by the first request. The same decode
    // measures the serialised KV of one cell, which tells whether host RAM can keep a conversation.
    const llama_seq_id scratch = kv_exec ? kv_exec->scratch() : -1;
    if (scratch < 0) return;
    const int k = std::clamp(std::min(batch->capacity(), n_ctx / 2), 1, 16);
    const llama_token tok = model->valid_token(1) ? 1 : 0;
    batch->clear();
    for (int i = 0; i < k; ++i) batch->add(tok, i, scratch, i == k - 1);
    const auto t0 = steady::now();
    const int ret = llama_decode(ctx, batch->get());
    if (ret == 0 && cell_bytes == 0) cell_bytes = llama_state_seq_get_size(ctx, scratch) / static_cast<size_t>(k);
    kv_exec->forget(scratch);
    batch->clear();
    if (ret != 0) rc::log::warn("engine", "warm_up_failed", {{"ret", ret}});
    else rc::log::debug("engine", "warmed_up", {{"ms", ms_between(t0, steady::now())}, {"tokens", k}});
}

void engine::impl::start_step_cost() {
    if (cost_cache) {
        if (auto e = cost_cache->find(cost_key)) {
            step_cost.set(e->fixed_ms, e->per_token_ms);
            cell_bytes = e->cell_bytes;
            cost_stored = e;
        }
    }
    steps.cost_fixed_ms.store(step_cost.fixed_ms());
    steps.cost_per_token_ms.store(step_cost.per_token_ms());
    steps.prefill_budget.store(prefill_budget_for(step_cost, opts.max_step_ms, 1, opts.prefill_chunk, chunk_align));
    rc::log::info("engine", "step_cost", {{"source", cost_stored ? "remembered" : "learning"}, {"fixed_ms", step_cost.fixed_ms()},
                                           {"per_token_ms", step_cost.per_token_ms()}, {"max_step_ms", opts.max_step_ms},
                                           {"prefill_budget", steps.prefill_budget.load()}});
}

void engine::impl::observe_step(int n_tokens, double ms) {
    const bool was_calibrated = step_cost.calibrated();
    step_cost.observe(n_tokens, ms);
    steps.cost_fixed_ms.store(step_cost.fixed_ms());
    steps.cost_per_token_ms.store(step_cost.per_token_ms());
    if (was_calibrated && !step_cost.calibrated())
        rc::log::warn("engine", "step_cost_forgotten", {{"reason", "its per-token cost alone predicted ten times what three small steps took"}, {"tokens", n_tokens}, {"ms", ms}});
    if (!was_calibrated && step_cost.calibrated())
        rc::log::info("engine", "step_cost_learned", {{"fixed_ms", step_cost.fixed_ms()}, {"per_token_ms", step_cost.per_token_ms()}, {"tokens", n_tokens}});
    if (!cost_cache || !step_cost.settled() || !step_cost.consistent()) return;
    const bool changed = !cost_stored || differs(cost_stored->per_token_ms, step_cost.per_token_ms(), 0.01) ||
                         differs(cost_stored->fixed_ms, step_cost.fixed_ms(), 2.0) || (cost_stored->cell_bytes == 0 && cell_bytes > 0);
    // A busy machine moves the model back and forth: the file follows at most twice a minute.
    if (!changed || (cost_stored_at != steady::time_point{} && steady::now() - cost_stored_at < std::chrono::seconds(30))) return;
    if (cost_stored)
        rc::log::info("engine", "step_cost_replaced", {{"stored_fixed_ms", cost_stored->fixed_ms}, {"stored_per_token_ms", cost_stored->per_token_ms},
                                                       {"fixed_ms", step_cost.fixed_ms()}, {"per_token_ms", step_cost.per_token_ms()}});
    step_cost_entry e{step_cost.fixed_ms(), step_cost.per_token_ms(), cell_bytes};
    // A few hundred bytes, no fsync: a lost write only means learning again next load.
    auto st = cost_cache->store(cost_key, e);
    cost_stored = e;  // stored or not, not tried again on every step
    cost_stored_at = steady::now();
    if (!st) rc::log::warn("engine", "step_cost_not_stored", {{"error", st.err().message}});
}

}  // namespace rc::engine
