#pragma once
// The KV planner (ARCHITECTURE.md §5, in the spirit of vLLM's KVCacheManager): pure decisions. The
// engine's KV executor (engine/kv_executor.h) asks it what to do and applies the answer; the planner
// owns nothing — it reads the cell ledger, the index of what is stored below the context and the
// prompt-end aliases it is given, and returns plans. Plans are made before any llama_decode or state
// restore, against the real number of free cells, so neither ever fails for lack of cells:
//  * plan_reuse — where a prompt's prefix comes from: shared cells of a sequence in the context, then
//    whole blocks (and one partial tail or prompt-end alias) from host RAM or disk.
//  * plan_room  — which cells to free for N more, and by evicting what: idle conversations least
//    recently used first, a victim's tail blocks before its head, cells shared with others last;
//    then, when allowed, running sequences youngest first (swapped out, resumed later); never the
//    oldest running sequence.
//  * plan_store — the blocks of a sequence's range not yet stored below (demotion, write-back), and
//    the prompt-end aliases they make.
// Tests give it a fake block_index and a ledger of their own. Engine thread only.
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "kv/alias_table.h"
#include "kv/block_key.h"
#include "kv/cell_ledger.h"
#include "kv/kv_manager.h"

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

struct store_plan {
    std::vector<stored_block> blocks;                             // to save and store, in order
    std::vector<std::pair<block_key, block_alias>> aliases;        // to remember once they are stored
};

class kv_planner {
  public:
    // `index`: what is stored below the context; `aliases`: the prompt-end aliases. Either may be
    // null: nothing below (reuse and eviction within the context only).
    kv_planner(const planner_options & opts, const kv_identity & id, const block_index * index = nullptr, const alias_table * aliases = nullptr)
        : opts_(opts), id_(id), index_(index), aliases_(aliases) {}

    const planner_options & options() const { return opts_; }
    int block_size() const { return opts_.block_size; }
    bool has_tiers() const { return index_ != nullptr; }

    block_key root(std::string_view salt) const { return root_key(id_, salt); }
    // An empty key chain for a sequence with this salt; the sequence keeps it and the calls below
    // extend it as they need its keys (a token sequence is hashed once, however often it is planned).
    key_chain chain(std::string_view salt) const { return key_chain(root(salt), opts_.block_size); }

    // Up to `limit` tokens of `tokens` that need not be computed (a fresh prompt: all but its last
    // token, whose logits start the generation). `keys`: the chain of `tokens` under `salt`.
    reuse_plan plan_reuse(std::span<const int32_t> tokens, key_chain & keys, int limit, std::string_view salt,
                          std::span<const seq_view> context) const;
    // Against the cells `ledger` counts.
    room_plan plan_room(const room_request & want, std::span<const seq_view> seqs, const cell_ledger & ledger) const;

    // The blocks of tokens [from, to) (from block-aligned) that no tier below holds. `prompt_end`:
    // where the sequence's prompt ended; it and the token before it (a regenerate) become aliases of
    // the stored block that holds them, so a resume diverging there reuses that block trimmed.
    store_plan plan_store(std::span<const int32_t> tokens, key_chain & keys, int from, int to, int prompt_end) const;

    // Whole-sequence snapshots (their key is keys.key_at(tokens, n)): the longest stored one at or
    // before `limit`.
    reuse_plan plan_snapshot(std::span<const int32_t> tokens, key_chain & keys, int limit) const;

  private:
    std::optional<tier_name> where(const block_key & key) const { return index_ ? index_->where(key) : std::nullopt; }

    planner_options opts_;
    kv_identity id_;
    const block_index * index_ = nullptr;
    const alias_table * aliases_ = nullptr;
};

}  // namespace rc::kv
