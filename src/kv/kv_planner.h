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
//  * plan_store — what of a sequence to store below (demotion, swap-out, write-back) that no tier
//    holds yet, and the prompt-end aliases it makes; plan_filled — what a decode step made storable.
// How a model's memory can be cut is a type, not a flag: a block_planner for a per-token KV cache
// (prefixes shared, trimmed and stored block by block), a block_state_planner for sliding-window and
// hybrid memories (attention in blocks, the window or recurrent state beside them at checkpoints),
// a snapshot_planner for recurrent memories, whose state exists only whole, after the last decoded
// token. The engine applies their plans the same way. Tests give it a fake block_index and a ledger of
// their own.
// Engine thread only.
#include <memory>
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
    int n_cells = 4096;  // cells of the context (< 0: no per-token cells, a recurrent memory)
    // A memory kept whole: a state is also kept every this many blocks of a prompt (0: only at the
    // message boundaries the caller names and one token before the prompt's end).
    int checkpoint_blocks = 0;
};

// How the context's memory of a sequence can be cut (kv_planner::make picks the planner).
enum class memory_layout {
    blocks,             // a KV cell per token: any prefix can be shared, kept or stored
    whole_snapshots,    // recurrent: one state per sequence, never cut back
    blocks_and_states,  // sliding-window or hybrid: full-attention layers in blocks, the window or the
                        // recurrent state beside them at checkpoints
};

// What a stored blob holds of a sequence's memory (the KV executor saves and restores it so).
enum class blob_part {
    whole,      // every layer: a block of a per-token cache, or a whole snapshot
    attention,  // the full-attention layers' cells of the positions, alone
    state,      // the sliding-window cells or the recurrent state after the positions, alone
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
    int keep = 0;   // tokens taken from it (a state: 0, it holds no cells)
    int cells = 0;  // tokens it holds: a prompt-end alias is restored whole, then trimmed to `keep`
    blob_part part = blob_part::whole;
};

struct reuse_plan {
    int donor = -1;         // handle of the sequence whose first `from_context` cells are shared
    int from_context = 0;
    std::vector<reuse_block> blocks;  // consecutive, from token `from_context` on
    int reused() const;
    int restore_cells() const;  // new cells the restores need at their peak
    bool needs_disk() const;
    // The blocks are of no use unless every one of them is restored: they end with a state.
    bool all_or_nothing() const { return !blocks.empty() && blocks.back().part == blob_part::state; }
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
    int p0 = 0, p1 = 0;         // positions it covers (a state: the positions it comes after)
    blob_part part = blob_part::whole;
};

struct store_plan {
    std::vector<stored_block> blocks;                             // to save and store, in order
    std::vector<std::pair<block_key, block_alias>> aliases;        // to remember once they are stored
};

class kv_planner {
  public:
    // `index`: what is stored below the context; `aliases`: the prompt-end aliases (blocks only).
    // Either may be null: nothing below (reuse and eviction within the context only).
    static std::unique_ptr<kv_planner> make(memory_layout layout, const planner_options & opts, const kv_identity & id,
                                            const block_index * index = nullptr, const alias_table * aliases = nullptr);
    virtual ~kv_planner() = default;

    const planner_options & options() const { return opts_; }
    int block_size() const { return opts_.block_size; }
    bool has_tiers() const { return index_ != nullptr; }

    block_key root(std::string_view salt) const { return root_key(id_, salt); }
    // An empty key chain for a sequence with this salt; the sequence keeps it and the calls below
    // extend it as they need its keys (a token sequence is hashed once, however often it is planned).
    key_chain chain(std::string_view salt) const { return key_chain(root(salt), opts_.block_size); }

    // Up to `limit` tokens of `tokens` that need not be computed (a fresh prompt: all but its last
    // token, whose logits start the generation). `keys`: the chain of `tokens` under `salt`.
    virtual reuse_plan plan_reuse(std::span<const int32_t> tokens, key_chain & keys, int limit, std::string_view salt,
                                  std::span<const seq_view> context) const = 0;
    // Against the cells `ledger` counts.
    room_plan plan_room(const room_request & want, std::span<const seq_view> seqs, const cell_ledger & ledger) const;

    // What of `tokens` [from, to) to store below that no tier holds; `tokens` is all the context
    // holds of the sequence. `prompt_end`: where its prompt ended (a block_planner makes it and the
    // token before it aliases of the block that holds them, so a resume diverging there reuses it).
    virtual store_plan plan_store(std::span<const int32_t> tokens, key_chain & keys, int from, int to, int prompt_end) const = 0;
    // What a decode step that took the sequence from `before` to `after` tokens made storable while
    // it runs (a block_planner: the blocks it filled; a snapshot_planner: nothing, it stores at the end).
    virtual store_plan plan_filled(std::span<const int32_t> tokens, key_chain & keys, int before, int after, int prompt_end) const = 0;
    // Where a prompt's prefill, now at `n_past`, next stops so that its state is stored (-1: nowhere).
    // A state that cannot be cut back is kept at checkpoints: the message boundaries in `boundaries`
    // (the end of the system prompt, of the history; none shorter than a block), every checkpoint_blocks
    // blocks, and one token before the prompt's end (a regenerate, or a resume that diverges where
    // the reply began). Each is one stored state, evicted least recently used first like a block.
    virtual int checkpoint_at(int n_past, int n_prompt, std::span<const int> boundaries) const = 0;

  protected:
    kv_planner(const planner_options & opts, const kv_identity & id, const block_index * index, const alias_table * aliases)
        : opts_(opts), id_(id), index_(index), aliases_(aliases) {}
    // checkpoint_at for a memory whose state cannot be cut back (both planners of such memories).
    int state_checkpoint_at(int n_past, int n_prompt, std::span<const int> boundaries) const;
    // How many of `tokens` a reuse plan may take (`limit`, within them; 0 with nothing below), their
    // full blocks chained in `keys`.
    int chained_limit(std::span<const int32_t> tokens, key_chain & keys, int limit) const;
    // Whether an idle sequence can give back its tail cells (else only all of them).
    virtual bool cuts_back() const = 0;
    std::optional<tier_name> where(const block_key & key) const { return index_ ? index_->where(key) : std::nullopt; }

    planner_options opts_;
    kv_identity id_;
    const block_index * index_ = nullptr;
    const alias_table * aliases_ = nullptr;
};

// A per-token KV cache: blocks of block_size tokens.
class block_planner final : public kv_planner {
  public:
    block_planner(const planner_options & opts, const kv_identity & id, const block_index * index = nullptr, const alias_table * aliases = nullptr)
        : kv_planner(opts, id, index, aliases) {}
    // A prefix in the context (the longest of the same salt), then consecutive whole blocks below
    // it and one partial tail or prompt-end alias.
    reuse_plan plan_reuse(std::span<const int32_t> tokens, key_chain & keys, int limit, std::string_view salt,
                          std::span<const seq_view> context) const override;
    store_plan plan_store(std::span<const int32_t> tokens, key_chain & keys, int from, int to, int prompt_end) const override;
    store_plan plan_filled(std::span<const int32_t> tokens, key_chain & keys, int before, int after, int prompt_end) const override;
    int checkpoint_at(int, int, std::span<const int>) const override { return -1; }

  private:
    bool cuts_back() const override { return true; }
};

// A memory kept whole: a snapshot's key is keys.key_at(tokens, n), for the state after n tokens.
class snapshot_planner final : public kv_planner {
  public:
    snapshot_planner(const planner_options & opts, const kv_identity & id, const block_index * index = nullptr)
        : kv_planner(opts, id, index, nullptr) {}
    // The longest stored snapshot at or before `limit`; nothing is shared in the context.
    reuse_plan plan_reuse(std::span<const int32_t> tokens, key_chain & keys, int limit, std::string_view salt,
                          std::span<const seq_view> context) const override;
    // The state after all of `tokens` (only that one exists), when `to` is their end.
    store_plan plan_store(std::span<const int32_t> tokens, key_chain & keys, int from, int to, int prompt_end) const override;
    store_plan plan_filled(std::span<const int32_t>, key_chain &, int, int, int) const override { return {}; }
    int checkpoint_at(int n_past, int n_prompt, std::span<const int> boundaries) const override {
        return state_checkpoint_at(n_past, n_prompt, boundaries);
    }

  private:
    bool cuts_back() const override { return false; }
};

// Sliding-window and hybrid memories (block_state_planner.cpp): the full-attention layers' KV in
// blocks, stored as they fill like a per-token cache (only those layers: blob_part::attention); the
// sliding window or the recurrent state (blob_part::state, key state_key of the position's key)
// stored at checkpoints, with a partial block of attention KV where a checkpoint is not at a block
// boundary. A prefix resumes at the longest stored state whose blocks are all stored: shared system
// prompts and conversations keep one copy of each block, and a state costs only its window or
// recurrent part. Nothing is cut back or shared in the context.
class block_state_planner final : public kv_planner {
  public:
    block_state_planner(const planner_options & opts, const kv_identity & id, const block_index * index = nullptr)
        : kv_planner(opts, id, index, nullptr) {}
    reuse_plan plan_reuse(std::span<const int32_t> tokens, key_chain & keys, int limit, std::string_view salt,
                          std::span<const seq_view> context) const override;
    // The blocks of [0, to) no tier holds, and the state after `to` when `to` is the end of `tokens`.
    store_plan plan_store(std::span<const int32_t> tokens, key_chain & keys, int from, int to, int prompt_end) const override;
    store_plan plan_filled(std::span<const int32_t> tokens, key_chain & keys, int before, int after, int prompt_end) const override;
    int checkpoint_at(int n_past, int n_prompt, std::span<const int> boundaries) const override {
        return state_checkpoint_at(n_past, n_prompt, boundaries);
    }

  private:
    bool cuts_back() const override { return false; }
};

}  // namespace rc::kv
