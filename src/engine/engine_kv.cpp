// The executor of the KV planner's decisions (kv/kv_planner.h) on the engine thread: it shares
// prefixes, restores blocks from host RAM and (streamed, as the I/O pool reads them) from disk, trims
// and releases idle conversations, swaps out running sequences, and stores blocks below the context.
// Every change to the llama_context is reported to the planner's cell ledger right after it is made.
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

sequence * engine::impl::find_live(llama_seq_id id) {
    for (auto & s : active)
        if (!s->done && s->id == id) return s.get();
    return nullptr;
}

kv::reuse_plan engine::impl::plan_reuse(const sequence & s) const {
    // The last token before sampling is always decoded: its logits start (or continue) the generation.
    auto views = context_views(true);
    return planner->plan_reuse(s.tokens, s.prefill_end - 1, s.req.cache_salt, views);
}

void engine::impl::share_prefix(sequence & s, const kv::reuse_plan & plan) {
    if (plan.donor < 0 || plan.from_context <= 0) return;
    llama_memory_seq_cp(mem, plan.donor, s.id, 0, plan.from_context);  // shares cells, copies nothing
    planner->ledger().share_prefix(plan.donor, s.id, plan.from_context);
    s.n_past = plan.from_context;
}

int engine::impl::restore_block(sequence & s, const kv::reuse_block & b, const kv::blob_ptr & blob) {
    if (!blob || blob->pos0 != s.n_past || blob->n_tokens < b.keep) return 0;  // evicted or replaced meanwhile: compute the rest
    auto & ledger = planner->ledger();
    if (ledger.free() < blob->n_tokens) {
        rc::log::error("engine", "restore_unplanned", {{"cells", blob->n_tokens}, {"free", ledger.free()}});
        return 0;
    }
    auto t0 = steady::now();
    if (!bridge->restore(*blob, s.id)) {
        rc::log::error("engine", "restore_failed", {{"cells", blob->n_tokens}, {"free", ledger.free()}});
        return 0;
    }
    ledger.append(s.id, blob->n_tokens);
    if (blob->n_tokens > b.keep) {  // a prompt-end alias: the block goes on past where the prompt diverges
        llama_memory_seq_rm(mem, s.id, s.n_past + b.keep, -1);
        ledger.trim(s.id, s.n_past + b.keep);
    }
    auto & st = planner->stats();
    const bool from_disk = b.tier == kv::tier_name::disk;
    st.add_tokens(from_disk ? kv::source::disk : kv::source::host, static_cast<uint64_t>(b.keep));
    (from_disk ? st.disk_to_context : st.host_to_context).add(blob->bytes.size());
    st.promotion_host.observe(seconds_since(t0));
    s.n_past += b.keep;
    return b.keep;
}

std::vector<kv::blob_ptr> engine::impl::host_blobs(const kv::reuse_plan & plan) {
    std::vector<kv::blob_ptr> out;
    out.reserve(plan.blocks.size());
    for (const auto & b : plan.blocks) out.push_back(tiers() ? tiers()->host_get(b.key) : nullptr);
    return out;
}

void engine::impl::restore_from_host(sequence & s, const kv::reuse_plan & plan, const std::vector<kv::blob_ptr> & blobs) {
    if (plan.blocks.empty()) return;
    auto t0 = steady::now();
    for (size_t i = 0; i < plan.blocks.size() && i < blobs.size(); ++i) {
        if (restore_block(s, plan.blocks[i], blobs[i]) < plan.blocks[i].keep) break;
    }
    planner->stats().restore_host.observe(seconds_since(t0));
}

void engine::impl::start_promotion(std::unique_ptr<sequence> s, kv::reuse_plan plan) {
    promotion p;
    p.seq = std::move(s);
    p.reserved = plan.restore_cells();
    planner->ledger().reserve(p.reserved);
    std::vector<kv::block_key> keys;
    for (const auto & b : plan.blocks) keys.push_back(b.key);
    p.plan = std::move(plan);
    auto in = p.in;
    auto notify = wake;
    tiers()->promote_from_disk(
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
    auto & ledger = planner->ledger();
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
            ledger.unreserve(give_back);
            p.reserved -= give_back;
            if (restore_block(*p.seq, b, blob) < b.keep) stopped = true;
            ++p.next;
            did = true;
        }
        if (stopped || (ended && p.next >= delivered)) {
            p.in->abandon();  // a restore that stopped early: the rest is not wanted
            ledger.unreserve(p.reserved);
            planner->stats().restore_disk.observe(seconds_since(p.started));
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
    auto & ledger = planner->ledger();
    if (ledger.free() >= cells) return true;
    auto views = context_views(true);
    auto plan = planner->plan_room({cells, may_preempt}, views);
    for (const auto & t : plan.trims) {
        if (auto * v = find_live(t.handle); v && v->idle) trim_idle(*v, t.keep);
    }
    for (int h : plan.preempt) {
        if (auto * s = find_live(h); s && s->live()) preempt(*s);
    }
    return ledger.free() >= cells;
}

void engine::impl::trim_idle(sequence & v, int keep) {
    if (!planner) return;  // idle conversations exist only with a planner
    keep = std::clamp(keep, 0, v.n_past);
    if (whole_snapshots) keep = 0;  // a recurrent state cannot be cut back
    if (tiers()) {
        if (whole_snapshots) save_snapshot(v, v.n_past);
        else store_blocks(v, keep, v.n_past);
    }
    planner->stats().evicted_context.add(1);
    if (keep == 0) {
        release(v);
        return;
    }
    llama_memory_seq_rm(mem, v.id, keep, -1);
    planner->ledger().trim(v.id, keep);
    v.n_past = keep;
    v.tokens.resize(static_cast<size_t>(keep));
}

void engine::impl::preempt(sequence & s) {
    // vLLM's swap mode: the sequence's blocks go to the tiers below (without tiers it recomputes when it
    // resumes), its cells are freed, and it waits at the front of the queue with its sampler and output.
    if (tiers()) {
        if (whole_snapshots) save_snapshot(s, s.n_past);
        else store_blocks(s, 0, s.n_past);
    }
    if (s.decoding) s.prefill_end = static_cast<int>(s.tokens.size());  // its last sampled token is not in the context yet
    llama_memory_seq_rm(mem, s.id, -1, -1);
    planner->ledger().trim(s.id, 0);
    free_ids.push_back(s.id);
    s.id = -1;
    s.n_past = 0;
    s.decoding = false;
    s.resumed = true;
    s.snapshot_at = -1;
    s.logits_row = -1;
    planner->stats().preemptions.add(1);
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
    if (tiers() && tiers()->disk_enabled()) {        // write-back starts now, so a restart keeps it
        if (whole_snapshots) save_snapshot(s, s.n_past, group);
        else store_blocks(s, 0, s.n_past, group);
        if (group) tiers()->join_pending_writes(group);  // the blocks stored while it ran, too
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
    if (!tiers()) return;
    for (auto & s : active) {
        if (!s->done && s->idle && tiers_can_keep(*s)) trim_idle(*s, 0);
    }
}

bool engine::impl::tiers_can_keep(const sequence & s) const {
    // Without disk, a conversation that host RAM could not comfortably hold stays: demoting it would
    // push older blocks out and lose its own tail.
    if (tiers()->disk_enabled()) return true;
    return cell_bytes > 0 && static_cast<size_t>(s.n_past) * cell_bytes <= tiers()->options().host_budget / 2;
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

void engine::impl::store_blocks(sequence & s, int from, int to, const std::shared_ptr<kv::write_group> & group) {
    if (!tiers()) return;
    const std::span<const int32_t> toks(s.tokens.data(), static_cast<size_t>(s.n_past));
    for (const auto & b : planner->blocks_to_store(toks, from, to, s.req.cache_salt, s.n_prompt)) {
        if (auto blob = bridge->save(s.id, b.p0, b.p1)) tiers()->store(b.key, std::move(blob), group);
    }
}

void engine::impl::store_completed_blocks(sequence & s, int n_past_before) {
    // A block goes below the context as soon as it is full, while its sequence runs: when the
    // sequence finishes, is demoted or swapped out, only its last partial block is left to copy, so
    // the copies (3 ms a block on bench-1b, 29 of them for a 1.8k-token conversation) are no longer
    // on the path of the request that needs its cells. Recurrent states are saved whole, at the end.
    if (!tiers() || whole_snapshots || !tiers_can_keep(s)) return;
    const int B = planner->block_size();
    const int from = n_past_before / B * B, to = s.n_past / B * B;
    if (to > from) store_blocks(s, from, to);
}

void engine::impl::save_snapshot(sequence & s, int n_tokens, const std::shared_ptr<kv::write_group> & group) {
    if (!tiers() || n_tokens <= 0) return;
    auto key = planner->snapshot_key(s.tokens, n_tokens, s.req.cache_salt);
    if (tiers()->where(key)) return;
    // Only the state after the last decoded token exists; the whole sequence is one blob.
    if (auto blob = bridge->save(s.id, 0, n_tokens)) tiers()->store(key, std::move(blob), group);
}

void engine::impl::prefetch(const std::vector<llama_token> & tokens, const std::string & salt) {
    // The consecutive blocks of `tokens` that are on disk only; the I/O pool reads them into host RAM.
    if (!tiers()) return;
    auto views = context_views(true);
    auto plan = planner->plan_reuse(tokens, static_cast<int>(tokens.size()), salt, views);
    std::vector<kv::block_key> on_disk;
    for (const auto & b : plan.blocks)
        if (b.tier == kv::tier_name::disk) on_disk.push_back(b.key);
    if (on_disk.empty()) return;
    rc::log::debug("engine", "prefetch", {{"blocks", static_cast<int64_t>(on_disk.size())}});
    tiers()->promote_from_disk(std::move(on_disk), {}, {});
}

}  // namespace rc::engine
