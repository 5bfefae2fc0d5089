#include "kv/cell_ledger.h"

#include <algorithm>
#include <cassert>
#include <limits>

namespace rc::kv {

namespace {
constexpr int k_unlimited = std::numeric_limits<int>::max() / 2;
}

cell_ledger::cell_ledger(int n_cells) : capacity_(n_cells) {}

int cell_ledger::free() const { return limited() ? capacity_ - used_ - reserved_ : k_unlimited; }

int cell_ledger::length(int seq) const {
    auto it = seqs_.find(seq);
    return it == seqs_.end() ? 0 : static_cast<int>(it->second.size());
}

std::vector<int32_t> & cell_ledger::cells_of(int seq) { return seqs_[seq]; }

int32_t cell_ledger::new_cell() {
    ++used_;
    if (!spare_ids_.empty()) {
        int32_t id = spare_ids_.back();
        spare_ids_.pop_back();
        refs_[static_cast<size_t>(id)] = 1;
        return id;
    }
    refs_.push_back(1);
    return static_cast<int32_t>(refs_.size() - 1);
}

void cell_ledger::unref(int32_t cell) {
    auto & r = refs_[static_cast<size_t>(cell)];
    assert(r > 0 && "a cell is dropped once per reference");
    if (--r == 0) {
        --used_;
        spare_ids_.push_back(cell);
    }
}

void cell_ledger::append(int seq, int n) {
    auto & cells = cells_of(seq);
    for (int i = 0; i < n; ++i) cells.push_back(new_cell());
}

void cell_ledger::share_prefix(int from, int to, int n) {
    if (n <= 0) return;
    auto src = seqs_.find(from);
    assert(src != seqs_.end() && static_cast<int>(src->second.size()) >= n && "a shared prefix exists in the donor");
    auto & dst = cells_of(to);
    assert(dst.empty() && "a prefix is shared into an empty sequence");
    for (int i = 0; i < n; ++i) {
        int32_t c = src->second[static_cast<size_t>(i)];
        ++refs_[static_cast<size_t>(c)];
        dst.push_back(c);
    }
}

void cell_ledger::trim(int seq, int keep) {
    auto it = seqs_.find(seq);
    if (it == seqs_.end()) return;
    auto & cells = it->second;
    keep = std::max(0, keep);
    while (static_cast<int>(cells.size()) > keep) {
        unref(cells.back());
        cells.pop_back();
    }
    if (cells.empty()) seqs_.erase(it);
}

cell_ledger::simulation cell_ledger::simulate() const { return simulation(*this); }

cell_ledger::simulation::simulation(const cell_ledger & l) : l_(l), dropped_(l.refs_.size(), 0), free_(l.free()) {}

int cell_ledger::simulation::length(int seq) const {
    if (auto it = len_.find(seq); it != len_.end()) return it->second;
    return l_.length(seq);
}

int cell_ledger::simulation::freed_by_trim(int seq, int keep) const {
    auto it = l_.seqs_.find(seq);
    if (it == l_.seqs_.end()) return 0;
    const int len = length(seq);
    // A cell referenced twice by the dropped range cannot happen: one sequence refers to a cell once.
    int freed = 0;
    for (int p = std::max(0, keep); p < len; ++p) {
        int32_t c = it->second[static_cast<size_t>(p)];
        if (l_.refs_[static_cast<size_t>(c)] - dropped_[static_cast<size_t>(c)] == 1) ++freed;
    }
    return freed;
}

int cell_ledger::simulation::trim(int seq, int keep) {
    auto it = l_.seqs_.find(seq);
    if (it == l_.seqs_.end()) return 0;
    const int len = length(seq);
    keep = std::max(0, keep);
    int freed = 0;
    for (int p = keep; p < len; ++p) {
        int32_t c = it->second[static_cast<size_t>(p)];
        if (l_.refs_[static_cast<size_t>(c)] - ++dropped_[static_cast<size_t>(c)] == 0) ++freed;
    }
    if (keep < len) len_[seq] = keep;
    free_ += freed;
    return freed;
}

}  // namespace rc::kv
