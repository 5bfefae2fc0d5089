#pragma once
// The KV planner (ARCHITECTURE.md §5, in the spirit of vLLM's KVCacheManager): the engine asks it what to
// do, applies the answer through engine/kv_bridge, and reports each change back so the planner's cell
// count stays exact. Plans are made before any llama_decode or state restore, against the real number
// of free cells, so neither ever fails for lack of cells:
//  * plan_reuse — where a prompt's prefix comes from: shared cells of a sequence in the context, then
//    whole blocks (and one partial tail or prompt-end alias) from host RAM or disk.
//  * plan_room  — which cells to free for N more, and by evicting what: idle conversations least
//    recently used first, a victim's tail blocks before its head, cells shared with others last;
//    then, when allowed, running sequences youngest first (swapped out, resumed later); never the
//    oldest running sequence.
//  * blocks_to_store — the blocks of a sequence's range not yet stored below (demotion, write-back).
// It owns the tiers below the context (kv_manager), the cell ledger, the prompt-end aliases and the
// counters. Pure decisions over its inputs; tests give it a fake block_index. Engine thread only,
// except stats() (lock-free counters) and snapshot().
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kv/block_key.h"
#include "kv/cell_ledger.h"
#include "kv/kv_manager.h"
#include "kv/kv_stats.h"
#include "util/result.h"

namespace rc::kv {

struct planner_options {
    int block_size = 64;
    int n_cells = 4096;            // cells of the context (< 0: no per-token cells, a recurrent memory)
    bool whole_snapshots = false;  // recurrent / hybrid / sliding-window: whole-sequence states, never trimmed
};

// A sequence in the context, as the engine shows it to the planner.
struct seq_view {
    int handle = -1;                   // the engine's sequence id
    std::span<const int32_t> tokens;   // tokens whose KV is in the context
    std::string_view salt;
    bool running = false;              // false: an idle conversation kept for reuse
    uint64_t order = 0;                // idle: last use; running: admission (larger = younger)
};

struct reuse_block {
    block_key key;
    tier_name tier = tier_name::host;
    int keep = 0;   // tokens taken from it
    int cells = 0;  // tokens it holds: a prompt-end alias is restored whole, then trimmed to `keep`
};

struct reuse_plan {
    int donor = -1;         // handle of the sequence whose first `from_context` cells are shared
    int from_context = 0;
    std::vector<reuse_block> blocks;  // consecutive, from token `from_context` on
    int reused() const;
    int restore_cells() const;  // new cells the restores need at their peak
    bool needs_disk() const;
};

struct room_request {
    int cells = 0;              // free cells wanted
    bool may_preempt = false;   // running sequences may be swapped out (step planning, not admission)
};

struct room_plan {
    struct trim {
        int handle;
        int keep;  // tokens it keeps; what lies beyond is demoted, then dropped (0: released)
    };
    std::vector<trim> trims;    // idle sequences, in this order
    std::vector<int> preempt;   // running sequences to swap out, youngest first
    bool ok = false;            // applying it leaves `cells` free
    int free_after = 0;
};

struct stored_block {
    block_key key;
    int p0 = 0, p1 = 0;         // positions it covers
};

class kv_planner {
  public:
    // `index`: what is stored below the context (tests pass a fake; open_planner attaches real
    // tiers); null: nothing below (reuse and eviction within the context only).
    kv_planner(const planner_options & opts, const kv_identity & id, const block_index * index = nullptr);
    // Takes the tiers below the context; their counters must be this planner's stats().
    void attach_tiers(std::unique_ptr<kv_manager> tiers);

    const planner_options & options() const { return opts_; }
    int block_size() const { return opts_.block_size; }
    kv_manager * tiers() const { return tiers_.get(); }
    bool has_tiers() const { return index_ != nullptr; }
    cell_ledger & ledger() { return ledger_; }
    const cell_ledger & ledger() const { return ledger_; }
    kv_stats & stats() { return stats_; }
    kv_stats_snapshot snapshot() const;

    block_key root(std::string_view salt) const { return root_key(id_, salt); }

    // Up to `limit` tokens of `tokens` that need not be computed (a fresh prompt: all but its last
    // token, whose logits start the generation).
    reuse_plan plan_reuse(std::span<const int32_t> tokens, int limit, std::string_view salt, std::span<const seq_view> context) const;
    room_plan plan_room(const room_request & want, std::span<const seq_view> seqs) const;

    // The blocks of tokens [from, to) (from block-aligned) that no tier below holds. `prompt_end`:
    // where the sequence's prompt ended; it and the token before it (a regenerate) become aliases of
    // the stored block that holds them, so a resume diverging there reuses that block trimmed.
    std::vector<stored_block> blocks_to_store(std::span<const int32_t> tokens, int from, int to, std::string_view salt, int prompt_end);

    // Whole-sequence snapshots: the key of the state after exactly `n` tokens, and the longest
    // stored one at or before `limit`.
    block_key snapshot_key(std::span<const int32_t> tokens, int n, std::string_view salt) const;
    reuse_plan plan_snapshot(std::span<const int32_t> tokens, int limit, std::string_view salt) const;

  private:
    struct alias {
        block_key target;
        int from = 0;    // the block's first token
        int cells = 0;   // tokens the target holds
    };
    std::optional<tier_name> where(const block_key & key) const { return index_ ? index_->where(key) : std::nullopt; }
    void remember_alias(const block_key & alias_key, const alias & a, bool persist);
    void load_aliases();

    planner_options opts_;
    kv_identity id_;
    kv_stats stats_;
    std::unique_ptr<kv_manager> tiers_;
    const block_index * index_ = nullptr;
    cell_ledger ledger_;
    std::unordered_map<block_key, alias, block_key_hash> aliases_;
    std::deque<block_key> alias_order_;  // oldest first, bounded
};

// Opens the tiers (when any is configured) and the planner over them. Errors as kv_manager::open.
result<std::unique_ptr<kv_planner>> open_planner(const planner_options & opts, const kv_options & tiers, const kv_identity & id);

}  // namespace rc::kv
