#include "llama/bpe_merges.h"

#include <algorithm>
#include <climits>
#include <string>

#include "util/utf8.h"

namespace rc::llama {

namespace {

// GPT-2's byte encoding: printable bytes stand for themselves, the others (controls, space, DEL,
// NBSP, soft hyphen) for U+0100 onwards in byte order. As UTF-8.
std::array<std::string, 256> byte_encoding() {
    std::array<std::string, 256> enc;
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
        const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
        const uint32_t cp = printable ? b : next++;
        enc[b] = cp < 0x80 ? std::string(1, static_cast<char>(cp))
                           : std::string{static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
    }
    return enc;
}

const std::array<std::string, 256> & encoded_bytes() {
    static const auto enc = byte_encoding();
    return enc;
}

uint64_t pair_key(int32_t left, int32_t right) { return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right); }

size_t pair_hash(uint64_t key) { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 20); }

}  // namespace

std::unique_ptr<bpe_merges> bpe_merges::make(const llama_vocab * vocab) {
    int32_t one = 0;
    if (llama_vocab_bpe_words(vocab, "a", 1, &one, 1) == INT32_MIN) return nullptr;
    return std::unique_ptr<bpe_merges>(new bpe_merges(vocab));
}

bpe_merges::bpe_merges(const llama_vocab * vocab)
    : vocab_(vocab), n_tokens_(llama_vocab_n_tokens(vocab)), next_id_(n_tokens_), ignore_merges_(llama_vocab_bpe_ignore_merges(vocab)) {
    for (llama_token id = 0; id < n_tokens_; ++id) {
        const char * t = llama_vocab_get_text(vocab, id);
        texts_.set(t ? t : "", id);
    }
    struct adding {
        bpe_merges * self;
        std::vector<std::array<int32_t, 4>> merges;  // left, right, rank, merged
    } add{this, {}};
    llama_vocab_bpe_merges(
        vocab,
        [](void * user, int32_t rank, const char * merge) {
            auto & a = *static_cast<adding *>(user);
            const std::string_view m = merge;
            const size_t space = m.find(' ');
            if (space == std::string_view::npos) return;  // a rank no merge has
            const std::string_view left = m.substr(0, space), right = m.substr(space + 1);
            a.merges.push_back({a.self->id_of(left), a.self->id_of(right), rank, a.self->id_of(std::string(left) + std::string(right))});
        },
        &add);
    size_t slots = 16;
    while (slots < add.merges.size() * 2) slots *= 2;
    pairs_.assign(slots, {});
    for (const auto & m : add.merges) add_pair(m[0], m[1], m[2], m[3]);
    const auto & enc = encoded_bytes();
    for (size_t b = 0; b < 256; ++b) {
        byte_symbol_[b] = texts_.find(enc[b]);
        byte_fallback_[b] = {-1, -1};
        for (size_t k = 0; k < enc[b].size(); ++k) {
            const int32_t t = texts_.find(enc[b].substr(k, 1));
            byte_fallback_[b][k] = t < n_tokens_ ? t : -1;
        }
    }
}

int32_t bpe_merges::id_of(std::string_view text) {
    int32_t id = texts_.find(text);
    if (id < 0) texts_.set(text, id = next_id_++);
    return id;
}

void bpe_merges::add_pair(int32_t left, int32_t right, int32_t rank, int32_t merged) {
    const uint64_t key = pair_key(left, right);
    for (size_t at = pair_hash(key) & (pairs_.size() - 1);; at = (at + 1) & (pairs_.size() - 1)) {
        if (pairs_[at].rank >= 0 && pairs_[at].key != key) continue;
        if (pairs_[at].rank < 0) pairs_[at] = {key, rank, merged};  // a pair listed twice keeps its first rank
        return;
    }
}

const bpe_merges::pair_slot * bpe_merges::find_pair(int32_t left, int32_t right) const {
    const uint64_t key = pair_key(left, right);
    for (size_t at = pair_hash(key) & (pairs_.size() - 1);; at = (at + 1) & (pairs_.size() - 1)) {
        const pair_slot & p = pairs_[at];
        if (p.rank < 0) return nullptr;
        if (p.key == key) return &p;
    }
}

bool bpe_merges::tokenize(std::string_view text, std::vector<llama_token> & out) const {
    // Valid UTF-8 is what llama.cpp's split gives back byte for byte.
    if (!utf8::is_valid(text) || text.size() > INT32_MAX) return false;
    std::vector<int32_t> words(text.size() + 1);  // a word has a byte at least
    const int32_t n = llama_vocab_bpe_words(vocab_, text.data(), static_cast<int32_t>(text.size()), words.data(), static_cast<int32_t>(words.size()));
    if (n < 0) return false;
    scratch work;
    size_t at = 0;
    for (int32_t w = 0; w < n; ++w) {
        const size_t len = static_cast<size_t>(words[static_cast<size_t>(w)]);
        if (at + len > text.size()) return false;  // not the text we gave (cannot happen for valid UTF-8)
        merge_word(text.substr(at, len), work, out);
        at += len;
    }
    return at == text.size();
}

void bpe_merges::merge_word(std::string_view word, scratch & work, std::vector<llama_token> & out) const {
    if (ignore_merges_) {
        const auto & enc = encoded_bytes();
        work.encoded.clear();
        for (char c : word) work.encoded += enc[static_cast<unsigned char>(c)];
        const int32_t whole = texts_.find(work.encoded);
        if (whole >= 0 && whole < n_tokens_) {
            out.push_back(whole);
            return;
        }
    }
    auto & syms = work.symbols;
    auto & queue = work.queue;
    syms.clear();
    queue.clear();
    for (uint32_t i = 0; i < word.size(); ++i)
        syms.push_back({i, 1, byte_symbol_[static_cast<unsigned char>(word[i])], static_cast<int32_t>(i) - 1,
                        i + 1 == word.size() ? -1 : static_cast<int32_t>(i) + 1});
    // The queue's order: lowest rank first, then the leftmost.
    auto after = [](const candidate & a, const candidate & b) { return a.rank > b.rank || (a.rank == b.rank && a.left > b.left); };
    auto offer = [&](int32_t left, int32_t right) {
        if (left < 0 || right < 0) return;
        const symbol & l = syms[static_cast<size_t>(left)];
        const symbol & r = syms[static_cast<size_t>(right)];
        if (l.id < 0 || r.id < 0) return;
        const pair_slot * p = find_pair(l.id, r.id);
        if (!p) return;
        queue.push_back({p->rank, left, right, p->merged, l.n + r.n});
        std::push_heap(queue.begin(), queue.end(), after);
    };
    for (int32_t i = 1; i < static_cast<int32_t>(syms.size()); ++i) offer(i - 1, i);
    while (!queue.empty()) {
        std::pop_heap(queue.begin(), queue.end(), after);
        const candidate c = queue.back();
        queue.pop_back();
        symbol & l = syms[static_cast<size_t>(c.left)];
        symbol & r = syms[static_cast<size_t>(c.right)];
        if (l.n == 0 || r.n == 0 || l.n + r.n != c.size) continue;  // one of them merged since
        l.id = c.merged;
        l.n += r.n;
        r.n = 0;
        l.next = r.next;
        if (r.next >= 0) syms[static_cast<size_t>(r.next)].prev = c.left;
        offer(l.prev, c.left);
        offer(c.left, l.next);
    }
    for (int32_t i = syms.empty() ? -1 : 0; i >= 0; i = syms[static_cast<size_t>(i)].next) {
        const symbol & s = syms[static_cast<size_t>(i)];
        if (s.id >= 0 && s.id < n_tokens_) {
            out.push_back(s.id);
            continue;
        }
        for (uint32_t k = s.start; k < s.start + s.n; ++k)
            for (llama_token t : byte_fallback_[static_cast<unsigned char>(word[k])])
                if (t >= 0) out.push_back(t);
    }
}

}  // namespace rc::llama
