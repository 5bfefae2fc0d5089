#include "llama/merge_tables.h"

#include <algorithm>

namespace rc::llama {

uint64_t text_table::hash(std::string_view text) {
    uint64_t h = 14695981039346656037ull;  // FNV-1a
    for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
    return h;
}

size_t text_table::slot_of(std::string_view text, uint64_t h) const {
    size_t at = h & (slots_.size() - 1);
    while (slots_[at].value >= 0 && !(slots_[at].hash == h && text_of(slots_[at]) == text)) at = (at + 1) & (slots_.size() - 1);
    return at;
}

void text_table::grow() {
    std::vector<slot> old = std::move(slots_);
    slots_.assign(std::max<size_t>(16, old.size() * 2), {});
    for (const slot & s : old)
        if (s.value >= 0) slots_[slot_of(text_of(s), s.hash)] = s;
}

void text_table::set(std::string_view text, int32_t value) {
    if ((used_ + 1) * 2 > slots_.size()) grow();
    const uint64_t h = hash(text);
    slot & s = slots_[slot_of(text, h)];
    if (s.value < 0) {
        s.hash = h;
        s.offset = static_cast<uint32_t>(texts_.size());
        s.length = static_cast<uint32_t>(text.size());
        texts_.append(text);
        ++used_;
        longest_ = std::max(longest_, text.size());
    }
    s.value = value;
}

int32_t text_table::find(std::string_view text) const {
    if (slots_.empty()) return -1;
    return slots_[slot_of(text, hash(text))].value;
}

}  // namespace rc::llama
