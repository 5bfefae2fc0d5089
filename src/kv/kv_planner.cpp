#include "kv/kv_planner.h"

#include <algorithm>
#include <cstring>

#include "util/log.h"

namespace rc::kv {

namespace {

constexpr size_t k_max_aliases = 4096;

int common_prefix(std::span<const int32_t> a, std::span<const int32_t> b, int limit) {
    const int n = std::min({static_cast<int>(a.size()), static_cast<int>(b.size()), limit});
    int i = 0;
    while (i < n && a[static_cast<size_t>(i)] == b[static_cast<size_t>(i)]) ++i;
    return i;
}

// Persisted alias record: identity digest, alias key, target key, first token, target's tokens.
constexpr size_t k_alias_record_bytes = 32 + 32 + 32 + 4 + 4;

std::vector<uint8_t> encode_alias(const digest256 & ident, const block_key & key, const block_key & target, int from, int cells) {
    std::vector<uint8_t> rec(k_alias_record_bytes);
    std::memcpy(rec.data(), ident.data(), 32);
    std::memcpy(rec.data() + 32, key.d.data(), 32);
    std::memcpy(rec.data() + 64, target.d.data(), 32);
    std::memcpy(rec.data() + 96, &from, 4);
    std::memcpy(rec.data() + 100, &cells, 4);
    return rec;
}

}  // namespace

int reuse_plan::reused() const {
    int n = from_context;
    for (const auto & b : blocks) n += b.keep;
    return n;
}

int reuse_plan::restore_cells() const {
    int n = 0;
    for (const auto & b : blocks) n += b.keep;
    // Only the last block can be an alias holding more than it keeps; it is trimmed after its restore.
    if (!blocks.empty()) n += std::max(0, blocks.back().cells - blocks.back().keep);
    return n;
}

bool reuse_plan::needs_disk() const {
    return std::any_of(blocks.begin(), blocks.end(), [](const reuse_block & b) { return b.tier == tier_name::disk; });
}

kv_planner::kv_planner(const planner_options & opts, const kv_identity & id, const block_index * index)
    : opts_(opts), id_(id), index_(index), ledger_(opts.n_cells) {}

void kv_planner::attach_tiers(std::unique_ptr<kv_manager> tiers) {
    tiers_ = std::move(tiers);
    index_ = tiers_.get();
    load_aliases();
}

result<std::unique_ptr<kv_planner>> open_planner(const planner_options & opts, const kv_options & tiers, const kv_identity & id) {
    if (opts.block_size < 1 || opts.block_size > 4096) return make_error(errc::invalid_argument, "KV block size must be 1..4096 tokens");
    auto p = std::make_unique<kv_planner>(opts, id);
    if (tiers.host_budget > 0 || (!tiers.disk_dir.empty() && tiers.disk_budget > 0)) {
        auto m = kv_manager::open(tiers, id, p->stats());
        if (!m) return m.err();
        p->attach_tiers(std::move(m.value()));
    }
    return p;
}

kv_stats_snapshot kv_planner::snapshot() const {
    kv_stats_snapshot s;
    s.prompt_tokens = {stats_.tokens_computed.get(), stats_.tokens_context.get(), stats_.tokens_host.get(), stats_.tokens_disk.get()};
    auto move = [](const kv_stats::move_counter & m) { return kv_stats_snapshot::move_count{m.blocks.get(), m.bytes.get()}; };
    s.moves = {move(stats_.context_to_host), move(stats_.host_to_disk), move(stats_.disk_to_host), move(stats_.host_to_context), move(stats_.disk_to_context)};
    s.evictions = {stats_.evicted_context.get(), stats_.evicted_host.get(), stats_.evicted_disk.get()};
    s.preemptions = stats_.preemptions.get();
    s.promotion_host = histogram_snapshot::of(stats_.promotion_host);
    s.promotion_disk = histogram_snapshot::of(stats_.promotion_disk);
    s.restore_host = histogram_snapshot::of(stats_.restore_host);
    s.restore_disk = histogram_snapshot::of(stats_.restore_disk);
    s.block_size = opts_.block_size;
    if (tiers_) {
        const auto & o = tiers_->options();
        s.corrupt_blocks = tiers_->corrupt_blocks();
        s.missing_blocks = tiers_->missing_blocks();
        s.host = {tiers_->host_enabled(), tiers_->host_bytes(), tiers_->host_enabled() ? o.host_budget : 0, tiers_->host_blocks()};
        s.disk = {tiers_->disk_enabled(), tiers_->disk_bytes(), tiers_->disk_enabled() ? o.disk_budget : 0, tiers_->disk_blocks()};
    }
    return s;
}

reuse_plan kv_planner::plan_reuse(std::span<const int32_t> tokens, int limit, std::string_view salt, std::span<const seq_view> context) const {
    reuse_plan plan;
    limit = std::min(limit, static_cast<int>(tokens.size()));
    if (limit <= 0) return plan;
    if (!opts_.whole_snapshots) {
        for (const auto & o : context) {
            if (o.salt != salt) continue;
            int n = common_prefix(o.tokens, tokens, limit);
            if (n > plan.from_context) {
                plan.from_context = n;
                plan.donor = o.handle;
            }
        }
    }
    if (!index_) return plan;
    if (opts_.whole_snapshots) return plan_snapshot(tokens, limit, salt);

    // Below the context: consecutive whole blocks from the block holding the context prefix's end,
    // then the longest partial tail (a resumed conversation's last, unfilled block) or prompt-end alias.
    const int B = opts_.block_size;
    const int start = (plan.from_context / B) * B;
    auto chain = full_block_keys(root(salt), tokens.subspan(0, static_cast<size_t>(start)), B);
    block_key prev = chain.empty() ? root(salt) : chain.back();
    reuse_plan tiers;
    int covered = start;
    while (covered + B <= limit) {
        auto key = full_block_key(prev, tokens.subspan(static_cast<size_t>(covered), static_cast<size_t>(B)));
        auto w = where(key);
        if (!w) break;
        tiers.blocks.push_back({key, *w, B, B});
        prev = key;
        covered += B;
    }
    for (int m = std::min(B - 1, limit - covered); m > 0; --m) {
        auto key = partial_block_key(prev, tokens.subspan(static_cast<size_t>(covered), static_cast<size_t>(m)));
        int cells = m;
        auto w = where(key);
        if (!w) {
            auto a = aliases_.find(key);
            if (a == aliases_.end() || a->second.from != covered) continue;
            key = a->second.target;
            cells = a->second.cells;
            w = where(key);
        }
        if (w) {
            tiers.blocks.push_back({key, *w, m, cells});
            covered += m;
            break;
        }
    }
    if (covered > plan.from_context) {
        tiers.from_context = start;
        tiers.donor = start > 0 ? plan.donor : -1;
        return tiers;
    }
    return plan;
}

room_plan kv_planner::plan_room(const room_request & want, std::span<const seq_view> seqs) const {
    room_plan plan;
    auto sim = ledger_.simulate();
    auto done = [&] { return sim.free() >= want.cells; };
    auto record = [&](int handle, int keep) {
        for (auto & t : plan.trims) {
            if (t.handle == handle) {
                t.keep = keep;
                return;
            }
        }
        plan.trims.push_back({handle, keep});
    };
    std::vector<const seq_view *> idle, running;
    for (const auto & s : seqs) (s.running ? running : idle).push_back(&s);
    std::sort(idle.begin(), idle.end(), [](const seq_view * a, const seq_view * b) { return a->order < b->order; });
    std::sort(running.begin(), running.end(), [](const seq_view * a, const seq_view * b) { return a->order > b->order; });

    // 1. Tail blocks of idle conversations, least recently used first, while they free cells of their own.
    const int B = opts_.block_size;
    if (!opts_.whole_snapshots) {
        for (const auto * v : idle) {
            int len = sim.length(v->handle);
            while (!done() && len > 0) {
                const int keep = (len - 1) / B * B;
                if (sim.freed_by_trim(v->handle, keep) == 0) break;  // the rest is shared with others
                sim.trim(v->handle, keep);
                len = keep;
                record(v->handle, keep);
            }
            if (done()) break;
        }
    }
    // 2. Whole idle conversations: those that still free cells first, then those whose cells are shared
    //    (releasing every holder frees a shared prefix).
    for (int pass = 0; pass < 2 && !done(); ++pass) {
        for (const auto * v : idle) {
            if (done()) break;
            if (sim.length(v->handle) == 0) continue;
            if (pass == 0 && sim.freed_by_trim(v->handle, 0) == 0) continue;
            sim.trim(v->handle, 0);
            record(v->handle, 0);
        }
    }
    // 3. Running sequences, youngest first; the oldest always keeps running (it alone fits the pool).
    if (want.may_preempt && !done()) {
        for (size_t i = 0; i + 1 < running.size() && !done(); ++i) {
            sim.trim(running[i]->handle, 0);
            plan.preempt.push_back(running[i]->handle);
        }
    }
    plan.ok = done();
    plan.free_after = sim.free();
    return plan;
}

std::vector<stored_block> kv_planner::blocks_to_store(std::span<const int32_t> tokens, int from, int to, std::string_view salt, int prompt_end) {
    std::vector<stored_block> out;
    to = std::min(to, static_cast<int>(tokens.size()));
    const int B = opts_.block_size;
    auto resume_points_in = [&](const block_key & prev, int p0, int p1, const block_key & target) {
        for (int r : {prompt_end - 1, prompt_end}) {
            if (r <= p0 || r >= p1) continue;  // at a block boundary the block's own key matches
            auto key = partial_block_key(prev, tokens.subspan(static_cast<size_t>(p0), static_cast<size_t>(r - p0)));
            remember_alias(key, {target, p0, p1 - p0}, true);
        }
    };
    block_key prev = root(salt);
    int p = 0;
    for (; p + B <= to; p += B) {
        auto key = full_block_key(prev, tokens.subspan(static_cast<size_t>(p), static_cast<size_t>(B)));
        if (p >= from) {
            if (!where(key)) out.push_back({key, p, p + B});
            resume_points_in(prev, p, p + B, key);
        }
        prev = key;
    }
    if (p < to && p >= from) {
        auto key = partial_block_key(prev, tokens.subspan(static_cast<size_t>(p), static_cast<size_t>(to - p)));
        if (!where(key)) out.push_back({key, p, to});
        resume_points_in(prev, p, to, key);
    }
    return out;
}

block_key kv_planner::snapshot_key(std::span<const int32_t> tokens, int n, std::string_view salt) const {
    const int B = opts_.block_size;
    block_key prev = root(salt);
    int p = 0;
    for (; p + B <= n; p += B) prev = full_block_key(prev, tokens.subspan(static_cast<size_t>(p), static_cast<size_t>(B)));
    return p == n ? prev : partial_block_key(prev, tokens.subspan(static_cast<size_t>(p), static_cast<size_t>(n - p)));
}

reuse_plan kv_planner::plan_snapshot(std::span<const int32_t> tokens, int limit, std::string_view salt) const {
    // The longest stored snapshot at or before `limit`: a recurrent state cannot be cut back, so only
    // an exact length can be resumed. Chain keys are computed once; each length adds one partial key.
    reuse_plan plan;
    limit = std::min(limit, static_cast<int>(tokens.size()));
    if (limit <= 0) return plan;
    const int B = opts_.block_size;
    const block_key r = root(salt);
    auto chain = full_block_keys(r, tokens.subspan(0, static_cast<size_t>(limit) / B * B), B);
    for (int n = limit; n > 0; --n) {
        const int full = n / B;
        const block_key & prev = full == 0 ? r : chain[static_cast<size_t>(full - 1)];
        auto key = n % B == 0 ? prev : partial_block_key(prev, tokens.subspan(static_cast<size_t>(full) * B, static_cast<size_t>(n % B)));
        if (auto w = where(key)) {
            plan.blocks.push_back({key, *w, n, n});
            break;
        }
    }
    return plan;
}

void kv_planner::remember_alias(const block_key & alias_key, const alias & a, bool persist) {
    if (!aliases_.emplace(alias_key, a).second) return;
    alias_order_.push_back(alias_key);
    if (alias_order_.size() > k_max_aliases) {
        aliases_.erase(alias_order_.front());
        alias_order_.pop_front();
    }
    if (!persist || !tiers_ || !tiers_->disk_enabled()) return;
    tiers_->append_record(encode_alias(id_.digest(), alias_key, a.target, a.from, a.cells));
}

void kv_planner::load_aliases() {
    if (!tiers_ || !tiers_->disk_enabled()) return;
    auto records = tiers_->read_records();
    const digest256 ident = id_.digest();
    std::vector<std::vector<uint8_t>> kept;
    for (auto & rec : records) {
        if (rec.size() != k_alias_record_bytes || std::memcmp(rec.data(), ident.data(), 32) != 0) continue;
        block_key key;
        alias a;
        std::memcpy(key.d.data(), rec.data() + 32, 32);
        std::memcpy(a.target.d.data(), rec.data() + 64, 32);
        std::memcpy(&a.from, rec.data() + 96, 4);
        std::memcpy(&a.cells, rec.data() + 100, 4);
        if (a.from < 0 || a.cells <= 0 || a.cells > opts_.block_size) continue;
        remember_alias(key, a, false);
    }
    // The log only grows; once it holds far more than is kept, rewrite it with what is kept.
    if (records.size() > 2 * k_max_aliases) {
        for (const auto & k : alias_order_) {
            const auto & a = aliases_.at(k);
            kept.push_back(encode_alias(ident, k, a.target, a.from, a.cells));
        }
        tiers_->rewrite_records(kept);
    }
}

}  // namespace rc::kv
