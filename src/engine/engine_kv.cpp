// Prefix reuse and KV tiering on the engine thread (DESIGN.md §5): admission finds the longest
// cached prefix — shared cells of a sequence in the context (T0), then whole blocks from host RAM
// (T1) or disk (T2, read by the I/O pool while the request waits in `promoting`); finished
// conversations stay in the context as idle sequences until evicted least-recently-used first, and
// eviction demotes their blocks to the tiers below.
#include <algorithm>
#include <span>

#include "engine/engine_impl.h"
#include "util/log.h"

namespace rc::engine {

namespace {

int common_prefix(const std::vector<llama_token> & a, int na, const std::vector<llama_token> & b, int nb) {
    int n = std::min(na, nb);
    int i = 0;
    while (i < n && a[i] == b[i]) ++i;
    return i;
}

double seconds_since(steady::time_point t) { return std::chrono::duration<double>(steady::now() - t).count(); }

}  // namespace

bool reuse_plan::needs_disk() const { return std::find(tier_of.begin(), tier_of.end(), kv::tier_name::disk) != tier_of.end(); }

reuse_plan engine::impl::plan_reuse(const sequence & s) {
    reuse_plan plan;
    // The last prompt token is always decoded: its logits start the generation.
    const int limit = s.n_prompt - 1;
    if (limit <= 0) return plan;
    for (const auto & o : active) {
        if (o->done || o.get() == &s || o->req.cache_salt != s.req.cache_salt) continue;
        int n = common_prefix(o->tokens, o->n_past, s.tokens, limit);
        if (n > plan.from_context) {
            plan.from_context = n;
            plan.donor = o.get();
        }
    }
    if (!kv) return plan;
    if (whole_snapshots) return plan_snapshot(s);

    // Below the context: consecutive whole blocks from the block holding the context prefix's end,
    // then the longest partial tail (a resumed conversation's last, unfilled block).
    const int B = kv->block_size();
    const int start = (plan.from_context / B) * B;
    const std::span<const llama_token> toks(s.tokens);
    auto root = kv->root(s.req.cache_salt);
    auto chain = kv::full_block_keys(root, toks.subspan(0, start), B);
    kv::block_key prev = chain.empty() ? root : chain.back();
    reuse_plan tiers;
    int covered = start;
    while (covered + B <= limit) {
        auto key = kv::full_block_key(prev, toks.subspan(covered, B));
        auto where = kv->where(key);
        if (!where) break;
        tiers.tier_keys.push_back(key);
        tiers.tier_tokens.push_back(B);
        tiers.tier_of.push_back(*where);
        prev = key;
        covered += B;
    }
    for (int m = std::min(B - 1, limit - covered); m > 0; --m) {
        auto key = kv::partial_block_key(prev, toks.subspan(covered, m));
        auto where = kv->where(key);
        if (!where) {
            if (auto a = prompt_end_aliases.find(key); a != prompt_end_aliases.end() && a->second.from == covered) {
                key = a->second.target;
                where = kv->where(key);
            }
        }
        if (where) {
            tiers.tier_keys.push_back(key);
            tiers.tier_tokens.push_back(m);
            tiers.tier_of.push_back(*where);
            covered += m;
            break;
        }
    }
    if (covered > plan.from_context) {
        tiers.from_context = start;
        tiers.donor = start > 0 ? plan.donor : nullptr;
        return tiers;
    }
    return plan;
}

void engine::impl::apply_reuse(sequence & s, const reuse_plan & plan, const std::vector<kv::blob_ptr> & disk_blobs) {
    int n = 0;
    if (plan.donor && plan.from_context > 0) {
        llama_memory_seq_cp(mem, plan.donor->id, s.id, 0, plan.from_context);
        n = plan.from_context;
        if (kv) kv->stats().add_tokens(kv::source::context, static_cast<uint64_t>(n));
    }
    for (size_t i = 0; i < plan.tier_keys.size(); ++i) {
        const bool on_disk = plan.tier_of[i] == kv::tier_name::disk;
        kv::blob_ptr blob = i < disk_blobs.size() && disk_blobs[i] ? disk_blobs[i] : kv->host_get(plan.tier_keys[i]);
        const int keep = plan.tier_tokens[i];
        if (!blob || blob->pos0 != n || blob->n_tokens < keep) break;  // evicted meanwhile: compute the rest
        auto t0 = steady::now();
        bool ok = bridge->restore(*blob, s.id);
        if (!ok && evict_lru_idle()) ok = bridge->restore(*blob, s.id);
        if (!ok) break;
        if (blob->n_tokens > keep) llama_memory_seq_rm(mem, s.id, n + keep, -1);  // a prompt-end alias: trim
        kv->stats().add_tokens(on_disk ? kv::source::disk : kv::source::host, static_cast<uint64_t>(keep));
        kv->stats().add_move(kv::move::host_to_context, blob->bytes.size());
        kv->stats().promotion_latency[0].observe(seconds_since(t0));
        n += keep;
    }
    s.n_past = n;
    s.n_reused = n;
}

bool engine::impl::admit_with_reuse(std::unique_ptr<sequence> s) {
    reuse_plan plan = plan_reuse(*s);
    if (kv && plan.needs_disk()) {
        promotion p;
        p.plan = plan;
        p.plan.donor = nullptr;  // re-planned when the blocks arrive: the donor may be gone by then
        kv->promote_from_disk(plan.tier_keys, [ready = p.ready, blobs = p.blobs](std::vector<kv::blob_ptr> got) {
            *blobs = std::move(got);
            ready->store(true, std::memory_order_release);
        });
        p.seq = std::move(s);
        promoting.push_back(std::move(p));
        return false;
    }
    apply_reuse(*s, plan, {});
    active.push_back(std::move(s));
    return true;
}

void engine::impl::poll_promotions() {
    for (auto it = promoting.begin(); it != promoting.end();) {
        if (!it->ready->load(std::memory_order_acquire)) {
            ++it;
            continue;
        }
        // The disk blocks are in hand (and in T1 when it is on); the context part is re-planned now.
        reuse_plan fresh = plan_reuse(*it->seq);
        const auto & blobs = *it->blobs;
        std::vector<kv::blob_ptr> aligned(fresh.tier_keys.size());
        for (size_t i = 0; i < fresh.tier_keys.size(); ++i) {
            for (size_t j = 0; j < it->plan.tier_keys.size() && j < blobs.size(); ++j) {
                if (it->plan.tier_keys[j] == fresh.tier_keys[i]) {
                    aligned[i] = blobs[j];
                    fresh.tier_of[i] = it->plan.tier_of[j];  // count it where it came from, not the T1 copy
                }
            }
        }
        apply_reuse(*it->seq, fresh, aligned);
        active.push_back(std::move(it->seq));
        it = promoting.erase(it);
    }
}

void engine::impl::retire(sequence & s) {
    s.idle = true;
    s.decoding = false;
    s.logits_row = -1;
    s.last_used = steady::now();
    s.sampler.reset();
    s.tokens.resize(static_cast<size_t>(s.n_past));  // the last sampled token never reached the context
    if (kv && kv->disk_enabled()) save_blocks(s);      // write-back starts now, so a restart keeps it
    while (count_idle() > max_idle && evict_lru_idle()) {
    }
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
    if (kv) {
        save_blocks(*victim);
        ++kv->stats().evictions[static_cast<int>(kv::tier_name::context)];
    }
    release(*victim);
    return true;
}

void engine::impl::save_blocks(sequence & s) {
    if (!kv) return;
    if (whole_snapshots) {
        save_snapshot(s, s.n_past);
        return;
    }
    const int B = kv->block_size();
    const std::span<const llama_token> toks(s.tokens.data(), static_cast<size_t>(s.n_past));
    // The prompt's end, when it lies inside a block that also holds our reply: remembered as an
    // alias of that block (see prompt_end_aliases).
    const int prompt_end = s.n_prompt < s.n_past && s.n_prompt % B != 0 ? s.n_prompt : -1;
    auto remember_prompt_end = [&](const kv::block_key & prev, int from, const kv::block_key & target) {
        if (prompt_end <= from || prompt_end >= from + B) return;
        auto alias = kv::partial_block_key(prev, toks.subspan(from, prompt_end - from));
        if (!prompt_end_aliases.emplace(alias, prompt_end_alias{target, from}).second) return;
        prompt_end_order.push_back(alias);
        if (prompt_end_order.size() > 4096) {
            prompt_end_aliases.erase(prompt_end_order.front());
            prompt_end_order.pop_front();
        }
    };
    kv::block_key prev = kv->root(s.req.cache_salt);
    int p = 0;
    for (; p + B <= s.n_past; p += B) {
        auto key = kv::full_block_key(prev, toks.subspan(p, B));
        if (p >= s.n_saved && !kv->where(key)) {
            if (auto blob = bridge->save(s.id, p, p + B)) kv->store(key, std::move(blob));
        }
        remember_prompt_end(prev, p, key);
        prev = key;
    }
    if (p < s.n_past) {
        auto key = kv::partial_block_key(prev, toks.subspan(p));
        if (!kv->where(key)) {
            if (auto blob = bridge->save(s.id, p, s.n_past)) kv->store(key, std::move(blob));
        }
        remember_prompt_end(prev, p, key);
    }
    s.n_saved = p;
}

namespace {

// The key of the state after exactly `n` tokens: the block chain's key at n (a full block's key
// when n is a block boundary, else the partial key of the tail).
kv::block_key key_at(const kv::block_key & root, std::span<const llama_token> toks, int n, int B) {
    kv::block_key prev = root;
    int p = 0;
    for (; p + B <= n; p += B) prev = kv::full_block_key(prev, toks.subspan(p, B));
    return p == n ? prev : kv::partial_block_key(prev, toks.subspan(p, n - p));
}

}  // namespace

void engine::impl::prefetch(const std::vector<llama_token> & tokens, const std::string & salt) {
    // The consecutive blocks of `tokens` that are on disk only, from the first one not in host RAM
    // or the context; the I/O pool reads them into host RAM (promote_from_disk keeps them in T1).
    sequence probe;
    probe.tokens = tokens;
    probe.n_prompt = static_cast<int>(tokens.size()) + 1;  // the whole conversation, last token included
    probe.req.cache_salt = salt;
    reuse_plan plan = plan_reuse(probe);
    std::vector<kv::block_key> on_disk;
    for (size_t i = 0; i < plan.tier_keys.size(); ++i)
        if (plan.tier_of[i] == kv::tier_name::disk) on_disk.push_back(plan.tier_keys[i]);
    if (on_disk.empty()) return;
    rc::log::debug("engine", "prefetch", {{"blocks", static_cast<int64_t>(on_disk.size())}});
    kv->promote_from_disk(std::move(on_disk), [](std::vector<kv::blob_ptr>) {});
}

void engine::impl::save_snapshot(sequence & s, int n_tokens) {
    if (!kv || n_tokens <= 0) return;
    const std::span<const llama_token> toks(s.tokens.data(), s.tokens.size());
    auto key = key_at(kv->root(s.req.cache_salt), toks, n_tokens, kv->block_size());
    if (kv->where(key)) return;
    // Only the state after the last decoded token exists; the whole sequence is one blob.
    if (auto blob = bridge->save(s.id, 0, n_tokens)) kv->store(key, std::move(blob));
}

reuse_plan engine::impl::plan_snapshot(const sequence & s) const {
    // The longest stored snapshot at or before the last prompt token: a recurrent state cannot be
    // cut back, so only an exact length can be resumed. Chain keys are computed once; each length
    // adds one partial key of at most a block of tokens.
    reuse_plan plan;
    const int limit = s.n_prompt - 1;
    const int B = kv->block_size();
    const std::span<const llama_token> toks(s.tokens);
    auto root = kv->root(s.req.cache_salt);
    auto chain = kv::full_block_keys(root, toks.subspan(0, static_cast<size_t>(limit) / B * B), B);
    for (int n = limit; n > 0; --n) {
        const int full = n / B;
        const kv::block_key & prev = full == 0 ? root : chain[static_cast<size_t>(full - 1)];
        auto key = n % B == 0 ? prev : kv::partial_block_key(prev, toks.subspan(static_cast<size_t>(full) * B, n % B));
        if (auto where = kv->where(key)) {
            plan.tier_keys.push_back(key);
            plan.tier_tokens.push_back(n);
            plan.tier_of.push_back(*where);
            break;
        }
    }
    return plan;
}

}  // namespace rc::engine
