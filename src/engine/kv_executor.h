#pragma once
// The KV executor (ARCHITECTURE.md §5): the only code that changes the llama_context's memory
// (llama_memory_*, and the state copies of kv_bridge) and the only writer of the cell ledger, so
// the two never disagree. It owns what the planner reads — the ledger, the tiers below the context
// (kv_manager), the prompt-end aliases — and the KV counters; the planner (kv/kv_planner.h) owns
// nothing and returns plans, which the engine's scheduling (engine_kv.cpp) applies through here.
// Embedding models have an executor without a planner: their sequences are only ever forgotten.
// Engine thread only, except snapshot() and tiers()'s thread-safe calls.
#include <llama.h>

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "engine/kv_bridge.h"
#include "kv/alias_table.h"
#include "kv/cell_ledger.h"
#include "kv/kv_manager.h"
#include "kv/kv_planner.h"
#include "kv/kv_stats.h"
#include "util/result.h"

namespace rc::engine {

class kv_executor {
  public:
    // An embedding model's: memory operations only, no planner, no tiers.
    explicit kv_executor(llama_context * ctx);
    // A text model's: the planner for `layout` over the tiers `tiers` configures (opened here: errors as
    // kv_manager::open), block moves through the scratch sequence `scratch`.
    static result<std::unique_ptr<kv_executor>> open(llama_context * ctx, llama_seq_id scratch, kv::memory_layout layout,
                                                     const kv::planner_options & po, const kv::kv_options & tiers, const kv::kv_identity & id);
    ~kv_executor();
    kv_executor(const kv_executor &) = delete;
    kv_executor & operator=(const kv_executor &) = delete;

    bool plans() const { return planner_ != nullptr; }  // false for an embedding model
    const kv::kv_planner & planner() const { return *planner_; }
    kv::kv_manager * tiers() const { return tiers_.get(); }  // the engine's own view (engine::kv, drain); scheduling asks below
    bool has_tiers() const { return tiers_ != nullptr; }
    bool has_disk() const { return tiers_ && tiers_->disk_enabled(); }
    bool write_through() const { return has_disk() && tiers_->options().write_through; }
    // Whether the tiers can keep `bytes` of a conversation without pushing out older blocks and
    // losing its own tail: any amount with a disk tier, else half the host budget.
    bool can_keep(size_t bytes) const { return has_disk() || (tiers_ && bytes <= tiers_->options().host_budget / 2); }
    const kv::cell_ledger & ledger() const { return ledger_; }
    kv::kv_stats & stats() { return stats_; }
    kv::kv_stats_snapshot snapshot() const;
    llama_seq_id scratch() const { return bridge_ ? bridge_->scratch() : -1; }

    // The context's memory: each change made here, and counted in the ledger at once.
    void decoded(llama_seq_id seq, int n);                           // a decode placed n new cells
    void share_prefix(llama_seq_id from, llama_seq_id to, int n);     // `to` refers to `from`'s first n cells
    void trim(llama_seq_id seq, int keep);                            // drops positions [keep, end)
    void forget(llama_seq_id seq);                                    // drops every position of `seq`
    // Restores the blob's cells after `seq`'s last position and keeps `keep` of them (a prompt-end
    // alias holds more); a blob_part::state adds the window or recurrent state after them, no cells.
    // False, changing nothing, when there are not the cells for it or llama.cpp refuses the state.
    bool restore(llama_seq_id seq, const kv::block_blob & blob, int keep, kv::blob_part part = kv::blob_part::whole);
    void reserve(int n) { ledger_.reserve(n); }
    void unreserve(int n) { ledger_.unreserve(n); }

    // Below the context, as the planner plans it (kv_planner::plan_store): what of `seq`'s tokens
    // [from, to) no tier holds yet is saved and stored (`group`: a write-through request waits for
    // its disk writes), with the prompt-end aliases it makes. `tokens`: all the context holds of it.
    void store(llama_seq_id seq, std::span<const int32_t> tokens, kv::key_chain & keys, int from, int to, int prompt_end,
               const std::shared_ptr<kv::write_group> & group);
    // What a decode step from `before` to `after` tokens made storable (kv_planner::plan_filled).
    void store_filled(llama_seq_id seq, std::span<const int32_t> tokens, kv::key_chain & keys, int before, int after, int prompt_end);
    // `group` also waits for the disk writes queued before now (what a sequence stored while it ran).
    void join_pending_writes(const std::shared_ptr<kv::write_group> & group);
    // Host-RAM copies of a plan's blocks (null where a block is not in host RAM), held by the caller
    // so that an eviction cannot take them before they are restored.
    std::vector<kv::blob_ptr> host_blobs(const kv::reuse_plan & plan) const;
    // Reads blocks from disk on the I/O pool, handing each to `on_block` as it is verified; without
    // `on_block` (a prefetch) into host RAM. As kv_manager::promote_from_disk.
    void promote(std::vector<kv::block_key> keys, std::function<bool(size_t, kv::blob_ptr)> on_block, std::function<void(size_t)> on_end);

  private:
    kv_executor(llama_context * ctx, llama_seq_id scratch, int n_cells);
    void apply(llama_seq_id seq, const kv::store_plan & plan, const std::shared_ptr<kv::write_group> & group);

    llama_memory_t mem_;
    std::unique_ptr<kv_bridge> bridge_;  // null for an embedding model
    kv::cell_ledger ledger_;
    kv::kv_stats stats_;
    std::unique_ptr<kv::kv_manager> tiers_;      // null: nothing below the context
    std::unique_ptr<kv::alias_table> aliases_;   // with tiers
    std::unique_ptr<kv::kv_planner> planner_;    // reads the three above
};

}  // namespace rc::engine
