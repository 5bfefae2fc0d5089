#include "engine/kv_executor.h"

#include "util/log.h"

namespace rc::engine {

kv_executor::kv_executor(llama_context * ctx) : mem_(llama_get_memory(ctx)), ledger_(-1) {}

kv_executor::kv_executor(llama_context * ctx, llama_seq_id scratch, int n_cells)
    : mem_(llama_get_memory(ctx)), bridge_(std::make_unique<kv_bridge>(ctx, scratch)), ledger_(n_cells) {}

kv_executor::~kv_executor() = default;

result<std::unique_ptr<kv_executor>> kv_executor::open(llama_context * ctx, llama_seq_id scratch, kv::memory_layout layout,
                                                       const kv::planner_options & po, const kv::kv_options & tiers, const kv::kv_identity & id) {
    if (po.block_size < 1 || po.block_size > 4096) return make_error(errc::invalid_argument, "KV block size must be 1..4096 tokens");
    std::unique_ptr<kv_executor> x(new kv_executor(ctx, scratch, po.n_cells));
    if (tiers.host_budget > 0 || (!tiers.disk_dir.empty() && tiers.disk_budget > 0)) {
        auto m = kv::kv_manager::open(tiers, id, x->stats_);
        if (!m) return m.err();
        x->tiers_ = std::move(m.value());
        x->aliases_ = std::make_unique<kv::alias_table>(id, po.block_size, x->tiers_.get());
    }
    x->planner_ = kv::kv_planner::make(layout, po, id, x->tiers_.get(), x->aliases_.get());
    return x;
}

kv::kv_stats_snapshot kv_executor::snapshot() const {
    kv::kv_stats_snapshot s;
    const auto & st = stats_;
    s.prompt_tokens = {st.tokens_computed.get(), st.tokens_context.get(), st.tokens_host.get(), st.tokens_disk.get()};
    auto move = [](const kv::kv_stats::move_counter & m) { return kv::kv_stats_snapshot::move_count{m.blocks.get(), m.bytes.get()}; };
    s.moves = {move(st.context_to_host), move(st.host_to_disk), move(st.disk_to_host), move(st.host_to_context), move(st.disk_to_context)};
    s.evictions = {st.evicted_context.get(), st.evicted_host.get(), st.evicted_disk.get()};
    s.preemptions = st.preemptions.get();
    s.promotion_host = kv::histogram_snapshot::of(st.promotion_host);
    s.promotion_disk = kv::histogram_snapshot::of(st.promotion_disk);
    s.restore_host = kv::histogram_snapshot::of(st.restore_host);
    s.restore_disk = kv::histogram_snapshot::of(st.restore_disk);
    if (planner_) s.block_size = planner_->block_size();
    if (tiers_) {
        const auto & o = tiers_->options();
        s.corrupt_blocks = tiers_->corrupt_blocks();
        s.missing_blocks = tiers_->missing_blocks();
        s.host = {tiers_->host_enabled(), tiers_->host_bytes(), tiers_->host_enabled() ? o.host_budget : 0, tiers_->host_blocks()};
        s.disk = {tiers_->disk_enabled(), tiers_->disk_bytes(), tiers_->disk_enabled() ? o.disk_budget : 0, tiers_->disk_blocks()};
    }
    return s;
}

void kv_executor::decoded(llama_seq_id seq, int n) { ledger_.append(seq, n); }

void kv_executor::share_prefix(llama_seq_id from, llama_seq_id to, int n) {
    llama_memory_seq_cp(mem_, from, to, 0, n);  // shares cells, copies nothing
    ledger_.share_prefix(from, to, n);
}

void kv_executor::trim(llama_seq_id seq, int keep) {
    llama_memory_seq_rm(mem_, seq, keep, -1);
    ledger_.trim(seq, keep);
}

void kv_executor::forget(llama_seq_id seq) {
    llama_memory_seq_rm(mem_, seq, -1, -1);
    ledger_.trim(seq, 0);
}

bool kv_executor::restore(llama_seq_id seq, const kv::block_blob & blob, int keep, kv::blob_part part) {
    if (!bridge_) return false;
    const int cells = part == kv::blob_part::state ? 0 : blob.n_tokens;
    if (ledger_.free() < cells) {
        rc::log::error("engine", "restore_unplanned", {{"cells", cells}, {"free", ledger_.free()}});
        return false;
    }
    if (!bridge_->restore(blob, seq, part)) {
        rc::log::error("engine", "restore_failed", {{"cells", cells}, {"free", ledger_.free()}});
        return false;
    }
    if (part == kv::blob_part::state) return true;
    ledger_.append(seq, blob.n_tokens);
    if (blob.n_tokens > keep) trim(seq, blob.pos0 + keep);  // a prompt-end alias: the block goes on past the divergence
    return true;
}

void kv_executor::store(llama_seq_id seq, std::span<const int32_t> tokens, kv::key_chain & keys, int from, int to, int prompt_end,
                        const std::shared_ptr<kv::write_group> & group) {
    if (tiers_) apply(seq, planner_->plan_store(tokens, keys, from, to, prompt_end), group);
}

void kv_executor::store_filled(llama_seq_id seq, std::span<const int32_t> tokens, kv::key_chain & keys, int before, int after, int prompt_end) {
    if (tiers_) apply(seq, planner_->plan_filled(tokens, keys, before, after, prompt_end), nullptr);
}

void kv_executor::apply(llama_seq_id seq, const kv::store_plan & plan, const std::shared_ptr<kv::write_group> & group) {
    for (const auto & b : plan.blocks) {
        if (auto blob = bridge_->save(seq, b.p0, b.p1, b.part)) tiers_->store(b.key, std::move(blob), group);
    }
    for (const auto & [key, alias] : plan.aliases) aliases_->remember(key, alias);
}

void kv_executor::join_pending_writes(const std::shared_ptr<kv::write_group> & group) {
    if (tiers_ && group) tiers_->join_pending_writes(group);
}

std::vector<kv::blob_ptr> kv_executor::host_blobs(const kv::reuse_plan & plan) const {
    std::vector<kv::blob_ptr> out;
    out.reserve(plan.blocks.size());
    for (const auto & b : plan.blocks) out.push_back(tiers_ ? tiers_->host_get(b.key) : nullptr);
    return out;
}

void kv_executor::promote(std::vector<kv::block_key> keys, std::function<bool(size_t, kv::blob_ptr)> on_block, std::function<void(size_t)> on_end) {
    if (tiers_) tiers_->promote_from_disk(std::move(keys), std::move(on_block), std::move(on_end));
}

}  // namespace rc::engine
