#pragma once
// Moves one block of KV between a sequence in the llama_context and a host blob, with only the
// public API (ARCHITECTURE.md §5, verified on the pinned commit):
//   save:    seq_cp(s → scratch, [p0,p1)) → state_seq_get_data(scratch) → seq_rm(scratch)
//   restore: state_seq_set_data(scratch) (clears scratch first) → seq_cp(scratch → s) → seq_rm(scratch)
// Never restores straight into a live sequence. A blob holds every layer (blob_part::whole), or only
// the full-attention layers' cells of the positions (attention: llama.cpp's state flag that the patch
// state-base-only.patch adds), or only the sliding window or recurrent state (state:
// LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY), for sliding-window and hybrid memories. Engine thread only.
#include <llama.h>

#include <map>
#include <utility>

#include "kv/block_blob.h"
#include "kv/kv_planner.h"

namespace rc::engine {

class kv_bridge {
  public:
    kv_bridge(llama_context * ctx, llama_seq_id scratch)
        : ctx_(ctx), mem_(llama_get_memory(ctx)), scratch_(scratch), window_(llama_model_n_swa(llama_get_model(ctx))) {}

    // Serialises `part` of positions [p0, p1) of `seq` (a state: what follows p1, whatever p0). Null if
    // llama.cpp returns nothing.
    kv::blob_ptr save(llama_seq_id seq, int p0, int p1, kv::blob_part part = kv::blob_part::whole);
    // Adds the blob's cells to `seq`. False when there are no free cells (nothing changes then).
    bool restore(const kv::block_blob & blob, llama_seq_id seq, kv::blob_part part = kv::blob_part::whole) const;
    llama_seq_id scratch() const { return scratch_; }

  private:
    llama_context * ctx_;
    llama_memory_t mem_;
    llama_seq_id scratch_;
    int window_;  // the sliding window (0: none): a state keeps the cells the next token attends to
    // Serialised size by cell count and part: llama_state_seq_get_size walks the whole state as a dry
    // run, which cost as much as the copy itself (1.6 of 3 ms for a 64-cell block of bench-1b).
    std::map<std::pair<int, kv::blob_part>, size_t> size_of_;
};

}  // namespace rc::engine
