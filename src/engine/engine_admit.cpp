// Admission on the engine thread: swapped-out sequences resume first (oldest first), then new
// requests in arrival order. A request is admitted when a sequence slot is free and the planner can
// make room for its restore and first prefill chunk, plus a margin for the running sequences to
// grow, without touching a running sequence; otherwise it waits at the front of the queue.
#include <algorithm>

#include "engine/engine_impl.h"
#include "util/log.h"

namespace rc::engine {

int engine::impl::running_now() const {
    int n = static_cast<int>(promoting.size());
    for (const auto & s : active) n += s->live() ? 1 : 0;
    return n;
}

std::unique_ptr<sequence> engine::impl::make_sequence(pending_request && p) {
    auto & [req, ch] = p;
    auto s = std::make_unique<sequence>();
    s->submitted = steady::now();
    if (req.kind == request_kind::generate) {
        auto smp = take_sampler(*model, req.sampling, req.grammar);  // built by submit(), off this thread
        if (!smp) {
            send_error(*ch, smp.err().code, smp.err().message);
            ++failed;
            return nullptr;
        }
        s->sampler = std::move(smp.value());
    }
    s->tokens = req.prompt;
    if (plans()) s->keys = kv_exec->planner().chain(req.cache_salt);
    s->n_prompt = static_cast<int>(req.prompt.size());
    s->prefill_end = s->n_prompt;
    s->stops = stop_matcher(req.stop);
    s->req = std::move(req);
    s->channel = std::move(ch);
    s->order = next_order++;
    return s;
}

bool engine::impl::admit() {
    bool did = false;
    while (running_now() < opts.n_parallel) {
        std::unique_ptr<sequence> s;
        if (!queued.empty()) {
            s = std::move(queued.front());
            queued.pop_front();
        } else if (!waiting.empty()) {
            auto p = std::move(waiting.front());
            waiting.pop_front();
            s = make_sequence(std::move(p));
            if (!s) continue;
        } else {
            break;
        }
        if (!try_admit(s)) {
            queued.push_front(std::move(s));
            break;
        }
        did = true;
    }
    return did;
}

bool engine::impl::try_admit(std::unique_ptr<sequence> & s) {
    if (free_ids.empty() && !evict_lru_idle()) return false;
    s->id = free_ids.back();
    free_ids.pop_back();
    if (s->admitted == steady::time_point{}) s->admitted = steady::now();
    if (s->req.kind != request_kind::generate) {
        active.push_back(std::move(s));
        return true;
    }
    auto give_back = [&] {
        kv_exec->forget(s->id);
        free_ids.push_back(s->id);
        s->id = -1;
        s->n_past = 0;
        return false;
    };
    const auto t_admit = steady::now();
    kv::reuse_plan plan = plan_reuse(*s);
    share_prefix(*s, plan);
    const int running = running_now();
    const int block_size = kv_exec->planner().block_size();
    const int first_chunk = std::min(s->prefill_end - plan.reused(), block_size);
    const int margin = std::min(running * block_size, n_ctx / 8);  // the running sequences' next tokens
    const int need = plan.restore_cells() + first_chunk + margin;
    const auto & ledger = kv_exec->ledger();
    if (ledger.free() < need) {
        auto views = context_views(true);
        auto room = kv_exec->planner().plan_room({need, false}, views, ledger);
        // With nothing running there is nobody to wait for: make what room there is.
        if (!room.ok && running > 0) return give_back();
        make_room(need, false);
    }
    if (s->n_past > 0) kv_exec->stats().add_tokens(kv::source::context, static_cast<uint64_t>(s->n_past));
    if (plan.needs_disk() && kv_exec->has_tiers()) {
        start_promotion(std::move(s), std::move(plan));
        demote_idle();
        return true;
    }
    // The idle conversations make way once this one has shared what it takes from them, and before
    // its blocks come back: llama.cpp fills free cells from the bottom when most of them are free,
    // so the restored blocks and the rest of the prompt then sit together low in the pool instead of
    // above the idle ones' freed cells (a 2k-token resume's steps attended over 2,560 cells; now 2,304).
    // Its host blocks are taken first: storing the idle ones' last blocks may evict them from the index.
    const auto blobs = kv_exec->host_blobs(plan);  // held: an eviction cannot take them
    const auto t_demote = steady::now();
    demote_idle();
    const auto t_restore = steady::now();
    restore_from_host(*s, plan, blobs);
    rc::log::debug("engine", "admitted", {{"prompt", s->n_prompt}, {"from_context", plan.from_context}, {"restored", s->n_past - plan.from_context},
                                          {"room_ms", ms_between(t_admit, t_demote)}, {"demote_ms", ms_between(t_demote, t_restore)},
                                          {"restore_ms", ms_between(t_restore, steady::now())}});
    ready_to_prefill(std::move(s));
    return true;
}

void engine::impl::ready_to_prefill(std::unique_ptr<sequence> s) {
    if (!s->resumed) s->n_reused = s->n_past;
    if (!s->resumed) next_checkpoint(*s);
    active.push_back(std::move(s));
}

}  // namespace rc::engine
