// The engine's KV scheduling on its thread: it asks the planner (kv/kv_planner.h) for plans and
// applies them through the KV executor (kv_executor.h), which alone changes the context's memory and
// the cell ledger: prefixes shared, blocks restored from host RAM and (streamed, as the I/O pool reads
// them) from disk, idle conversations trimmed and released, running sequences swapped out, blocks
// stored below the context.
#include <algorithm>

#include "engine/engine_impl.h"
#include "util/log.h"

namespace rc::engine {

namespace {

double seconds_since(steady::time_point t) { return std::chrono::duration<double>(steady::now() - t).count(); }

}  // namespace

std::vector<kv::seq_view> engine::impl::context_views(bool include_running) const {
    std::vector<kv::seq_view> out;
    for (const auto & s : active) {
        if (s->done || (s->live() && !include_running)) continue;
        out.push_back({s->id, std::span<const int32_t>(s->tokens.data(), static_cast<size_t>(s->n_past)), s->req.cache_salt, s->live(),
                       s->idle ? s->last_used : s->order});
    }
    return out;
}

void engine::impl::announce_context() {
    if (!plans() || !kv_exec->has_tiers() || !kv_exec->tiers()->options().events) return;
    const int B = kv_exec->planner().block_size();
    std::vector<std::pair<uint64_t, int>> now;
    for (const auto & s : active)
        if (!s->done) now.emplace_back(s->order, s->n_past / B);
    if (now == context_announced) return;  // cells change only with these (a trim lowers n_past, a donor's share raises it)
    std::vector<uint64_t> keys;
    for (const auto & s : active) {
        if (s->done) continue;
        const int full = s->n_past / B;
        s->keys.extend(std::span<const int32_t>(s->tokens.data(), static_cast<size_t>(full) * B));
        for (int i = 0; i < full; ++i) keys.push_back(kv::event_key(s->keys.at(i)));
    }
    kv_exec->tiers()->context_holds(keys);
    context_announced = std::move(now);
}

sequence * engine::impl::find_live(llama_seq_id id) {
    for (auto & s : active)
        if (!s->done && s->id == id) return s.get();
    return nullptr;
}

kv::reuse_plan engine::impl::plan_reuse(sequence & s) const {
    // The last token before sampling is always decoded: its logits start (or continue) the generation.
    auto views = context_views(true);
    return kv_exec->planner().plan_reuse(s.tokens, s.keys, s.prefill_end - 1, s.req.cache_salt, views);
}

void engine::impl::share_prefix(sequence & s, const kv::reuse_plan & plan) {
    if (plan.donor < 0 || plan.from_context <= 0) return;
    kv_exec->share_prefix(plan.donor, s.id, plan.from_context);
    s.n_past = plan.from_context;
}

bool engine::impl::restore_block(sequence & s, const kv::reuse_block & b, const kv::blob_ptr & blob) {
    // Evicted or replaced meanwhile: the rest is computed. A state comes after the positions it holds.
    const bool state = b.part == kv::blob_part::state;
    if (!blob || (state ? blob->pos0 + blob->n_tokens != s.n_past : blob->pos0 != s.n_past || blob->n_tokens < b.keep)) return false;
    auto t0 = steady::now();
    if (!kv_exec->restore(s.id, *blob, b.keep, b.part)) return false;
    auto & st = kv_exec->stats();
    const bool from_disk = b.tier == kv::tier_name::disk;
    st.add_tokens(from_disk ? kv::source::disk : kv::source::host, static_cast<uint64_t>(b.keep));
    (from_disk ? st.disk_to_context : st.host_to_context).add(blob->bytes.size());
    st.promotion_host.observe(seconds_since(t0));
    s.n_past += b.keep;
    return true;
}

void engine::impl::settle_restore(sequence & s, const kv::reuse_plan & plan, bool complete) {
    // Attention blocks without the state after them (an eviction took one meanwhile) are no resume
    // point: a sliding window or a recurrent state would be missing. The prompt is computed instead.
    if (complete || !plan.all_or_nothing() || s.n_past <= plan.from_context) return;
    kv_exec->trim(s.id, plan.from_context);
    s.n_past = plan.from_context;
    rc::log::debug("engine", "restore_incomplete", {{"blocks", static_cast<int64_t>(plan.blocks.size())}});
}

void engine::impl::restore_from_host(sequence & s, const kv::reuse_plan & plan, const std::vector<kv::blob_ptr> & blobs) {
    if (plan.blocks.empty()) return;
    auto t0 = steady::now();
    size_t restored = 0;
    while (restored < plan.blocks.size() && restored < blobs.size() && restore_block(s, plan.blocks[restored], blobs[restored])) ++restored;
    settle_restore(s, plan, restored == plan.blocks.size());
    kv_exec->stats().restore_host.observe(seconds_since(t0));
}

void engine::impl::start_promotion(std::unique_ptr<sequence> s, kv::reuse_plan plan) {
    promotion p;
    p.seq = std::move(s);
    p.reserved = plan.restore_cells();
    kv_exec->reserve(p.reserved);
    std::vector<kv::block_key> keys;
    for (const auto & b : plan.blocks) keys.push_back(b.key);
    p.plan = std::move(plan);
    auto in = p.in;
    auto notify = wake;
    kv_exec->promote(
        std::move(keys),
        [in, notify](size_t i, kv::blob_ptr blob) {
            {
                std::lock_guard lock(in->mutex);
                if (in->abandoned) return false;
                in->blocks.emplace_back(i, std::move(blob));
            }
            if (notify) notify();
            return true;
        },
        [in, notify](size_t delivered) {
            {
                std::lock_guard lock(in->mutex);
                in->ended = true;
                in->delivered = delivered;
            }
            if (notify) notify();
        });
    promoting.push_back(std::move(p));
}

bool engine::impl::poll_promotions() {
    bool did = false;
    for (auto it = promoting.begin(); it != promoting.end();) {
        auto & p = *it;
        std::vector<std::pair<size_t, kv::blob_ptr>> arrived;
        bool ended;
        size_t delivered;
        {
            std::lock_guard lock(p.in->mutex);
            arrived.swap(p.in->blocks);
            ended = p.in->ended;
            delivered = p.in->delivered;
        }
        bool stopped = false;
        for (auto & [i, blob] : arrived) {
            if (stopped || i != p.next) continue;
            const auto & b = p.plan.blocks[i];
            // Its share of the reservation (restore_cells): what it keeps; the last one all it holds.
            const int share = i + 1 == p.plan.blocks.size() ? std::max(b.cells, b.keep) : b.keep;
            const int give_back = std::min(p.reserved, share);
            kv_exec->unreserve(give_back);
            p.reserved -= give_back;
            if (!restore_block(*p.seq, b, blob)) stopped = true;
            ++p.next;
            did = true;
        }
        if (stopped || (ended && p.next >= delivered)) {
            p.in->abandon();  // a restore that stopped early: the rest is not wanted
            kv_exec->unreserve(p.reserved);
            settle_restore(*p.seq, p.plan, !stopped && p.next == p.plan.blocks.size());
            kv_exec->stats().restore_disk.observe(seconds_since(p.started));
            ready_to_prefill(std::move(p.seq));
            it = promoting.erase(it);
            did = true;
        } else {
            ++it;
        }
    }
    return did;
}

bool engine::impl::make_room(int cells, bool may_preempt) {
    const auto & ledger = kv_exec->ledger();
    if (ledger.free() >= cells) return true;
    auto views = context_views(true);
    auto plan = kv_exec->planner().plan_room({cells, may_preempt}, views, ledger);
    for (const auto & t : plan.trims) {
        if (auto * v = find_live(t.handle); v && v->idle) trim_idle(*v, t.keep);
    }
    for (int h : plan.preempt) {
        if (auto * s = find_live(h); s && s->live()) preempt(*s);
    }
    return ledger.free() >= cells;
}

void engine::impl::trim_idle(sequence & v, int keep) {
    if (!plans()) return;  // idle conversations exist only with a planner
    keep = std::clamp(keep, 0, v.n_past);
    store(v, keep);
    kv_exec->stats().evicted_context.add(1);
    if (keep == 0) {
        release(v);
        return;
    }
    kv_exec->trim(v.id, keep);
    v.n_past = keep;
    v.tokens.resize(static_cast<size_t>(keep));
    v.keys.truncate(keep);
}

void engine::impl::preempt(sequence & s) {
    // vLLM's swap mode: the sequence's blocks go to the tiers below (without tiers it recomputes when it
    // resumes), its cells are freed, and it waits at the front of the queue with its sampler and output.
    store(s, 0);
    if (s.decoding) s.prefill_end = static_cast<int>(s.tokens.size());  // its last sampled token is not in the context yet
    kv_exec->forget(s.id);
    free_ids.push_back(s.id);
    s.id = -1;
    s.n_past = 0;
    s.decoding = false;
    s.resumed = true;
    s.checkpoint_at = -1;
    s.logits_row = -1;
    kv_exec->stats().preemptions.add(1);
    rc::log::debug("engine", "preempted", {{"tokens", static_cast<int64_t>(s.tokens.size())}});
    auto it = std::find_if(active.begin(), active.end(), [&](const auto & p) { return p.get() == &s; });
    auto owned = std::move(*it);
    active.erase(it);
    // Swapped-out sequences resume oldest first, before anything new.
    auto pos = std::find_if(queued.begin(), queued.end(), [&](const auto & q) { return !q->resumed || q->order > owned->order; });
    queued.insert(pos, std::move(owned));
}

void engine::impl::retire(sequence & s, const std::shared_ptr<kv::write_group> & group) {
    s.idle = true;
    s.decoding = false;
    s.logits_row = -1;
    s.last_used = next_order++;
    s.sampler.reset();
    s.tokens.resize(static_cast<size_t>(s.n_past));  // the last sampled token never reached the context
    s.keys.truncate(s.n_past);
    if (kv_exec->has_disk()) {                       // write-back starts now, so a restart keeps it
        store(s, 0, group);
        kv_exec->join_pending_writes(group);         // the blocks stored while it ran, too
    }
    while (count_idle() > max_idle && evict_lru_idle()) {
    }
    if (running_now() > 0) demote_idle();
}

void engine::impl::demote_idle() {
    // llama.cpp attends over every used cell of the unified cache, masked or not: an idle conversation
    // left in the context slows every other sequence's steps (4k idle cells made a 1k-token prefill
    // 1.2-1.3x slower on bench-1b). With a tier below to keep it, an idle conversation leaves the
    // context once another sequence uses it; its resume is then a host restore, a copy of its blocks.
    // (trim_idle marks it done; remove_finished drops it after the step.)
    if (!kv_exec->has_tiers()) return;
    for (auto & s : active) {
        if (!s->done && s->idle && tiers_can_keep(*s)) trim_idle(*s, 0);
    }
}

bool engine::impl::tiers_can_keep(const sequence & s) const {
    // Without disk, a conversation that host RAM could not comfortably hold stays: demoting it would
    // push older blocks out and lose its own tail.
    return cell_bytes > 0 ? kv_exec->can_keep(static_cast<size_t>(s.n_past) * cell_bytes) : kv_exec->has_disk();
}

int engine::impl::count_idle() const {
    int n = 0;
    for (const auto & s : active) n += (!s->done && s->idle) ? 1 : 0;
    return n;
}

bool engine::impl::evict_lru_idle() {
    sequence * victim = nullptr;
    for (auto & s : active) {
        if (s->done || !s->idle) continue;
        if (!victim || s->last_used < victim->last_used) victim = s.get();
    }
    if (!victim) return false;
    trim_idle(*victim, 0);
    return true;
}

void engine::impl::store(sequence & s, int from, const std::shared_ptr<kv::write_group> & group) {
    const std::span<const int32_t> toks(s.tokens.data(), static_cast<size_t>(s.n_past));
    kv_exec->store(s.id, toks, s.keys, from, s.n_past, s.n_prompt, group);
}

void engine::impl::next_checkpoint(sequence & s) {
    s.checkpoint_at = plans() ? kv_exec->planner().checkpoint_at(s.n_past, s.n_prompt, s.req.message_boundaries) : -1;
}

void engine::impl::store_filled(sequence & s, int n_past_before) {
    // A block goes below the context as soon as it is full, while its sequence runs: when the
    // sequence finishes, is demoted or swapped out, only its last partial block is left to copy, so
    // the copies (3 ms a block on bench-1b, 29 of them for a 1.8k-token conversation) are no longer
    // on the path of the request that needs its cells. (A snapshot is stored whole, at the end.)
    if (!kv_exec->has_tiers() || !tiers_can_keep(s)) return;
    const std::span<const int32_t> toks(s.tokens.data(), static_cast<size_t>(s.n_past));
    kv_exec->store_filled(s.id, toks, s.keys, n_past_before, s.n_past, s.n_prompt);
}

void engine::impl::prefetch(const std::vector<llama_token> & tokens, const std::string & salt) {
    // The consecutive blocks of `tokens` that are on disk only; the I/O pool reads them into host RAM.
    if (!kv_exec->has_tiers()) return;
    auto views = context_views(true);
    kv::key_chain keys = kv_exec->planner().chain(salt);
    auto plan = kv_exec->planner().plan_reuse(tokens, keys, static_cast<int>(tokens.size()), salt, views);
    std::vector<kv::block_key> on_disk;
    for (const auto & b : plan.blocks)
        if (b.tier == kv::tier_name::disk) on_disk.push_back(b.key);
    if (on_disk.empty()) return;
    rc::log::debug("engine", "prefetch", {{"blocks", static_cast<int64_t>(on_disk.size())}});
    kv_exec->promote(std::move(on_disk), {}, {});
}

}  // namespace rc::engine
