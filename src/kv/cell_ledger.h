#pragma once
// An exact count of the context's KV cells, kept beside llama.cpp's own (which it does not expose).
// Each position of a sequence refers to one cell; sharing a prefix (llama_memory_seq_cp) makes two
// sequences refer to the same cells; a cell is free when no sequence refers to it. The engine reports
// every change it makes to the llama_context (append, share, trim) and the planner reads the count
// and simulates evictions against it (kv_planner.h), so a decode or restore is never attempted
// without the cells it needs. Pure bookkeeping, no llama.cpp; engine thread only.
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace rc::kv {

class cell_ledger {
  public:
    // `n_cells` < 0: no limit (a recurrent memory keeps one state per sequence, not one cell per token).
    explicit cell_ledger(int n_cells);

    bool limited() const { return capacity_ >= 0; }
    int capacity() const { return capacity_; }
    int used() const { return used_; }
    // Cells neither used nor reserved (by promotions that will restore into them).
    int free() const;
    void reserve(int n) { reserved_ += n; }
    void unreserve(int n) { reserved_ -= n; }
    int reserved() const { return reserved_; }

    int length(int seq) const;  // positions the sequence refers to
    // `n` new cells at the sequence's next positions (decode, prefill, restore).
    void append(int seq, int n);
    // `to` (empty) refers to the cells of `from`'s first `n` positions.
    void share_prefix(int from, int to, int n);
    // Drops the sequence's positions [keep, length); keep 0 forgets it.
    void trim(int seq, int keep);

    // Cells that trim(seq, keep) would free, given the simulated drops of `sim` (see below).
    class simulation;
    simulation simulate() const;

  private:
    friend class simulation;
    std::vector<int32_t> & cells_of(int seq);
    int32_t new_cell();
    void unref(int32_t cell);

    int capacity_;
    int used_ = 0;
    int reserved_ = 0;
    std::vector<uint16_t> refs_;       // by cell id
    std::vector<int32_t> spare_ids_;   // cell ids with no reference
    std::unordered_map<int, std::vector<int32_t>> seqs_;  // sequence → cell id per position
};

// A what-if over the ledger: trims applied here change nothing real, and report the cells they
// would free. Used by the planner to choose evictions; valid until the ledger changes.
class cell_ledger::simulation {
  public:
    explicit simulation(const cell_ledger & l);
    int length(int seq) const;
    // Cells freed by also dropping the sequence's positions [keep, simulated length).
    int freed_by_trim(int seq, int keep) const;
    int trim(int seq, int keep);  // applies it; returns the cells freed
    int free() const { return free_; }

  private:
    const cell_ledger & l_;
    std::vector<uint16_t> dropped_;  // by cell id: simulated references removed
    std::unordered_map<int, int> len_;
    int free_;
};

}  // namespace rc::kv
