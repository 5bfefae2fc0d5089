#include "llama/spm_merges.h"

#include <algorithm>
#include <cstdio>

namespace rc::llama {

namespace {

constexpr std::string_view meta_space = "\xE2\x96\x81";  // "▁"

// llama.cpp's symbol length for a UTF-8 byte: lead bytes give their sequence's length, others 1.
size_t utf8_len(char c) {
    static constexpr size_t by_high_bits[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return by_high_bits[static_cast<unsigned char>(c) >> 4];
}

// A "▁" at `at` with something other than "▁" just before it.
bool word_starts(std::string_view s, size_t at) {
    return at > 0 && s.substr(at, meta_space.size()) == meta_space && (at < meta_space.size() || s.substr(at - meta_space.size(), meta_space.size()) != meta_space);
}

}  // namespace

bool spm_words_merge_apart(const llama_vocab * vocab) {
    for (llama_token id = 0; id < llama_vocab_n_tokens(vocab); ++id) {
        const char * t = llama_vocab_get_text(vocab, id);
        const std::string_view text = t ? t : "";
        for (size_t at = text.find(meta_space, 1); at != std::string_view::npos; at = text.find(meta_space, at + 1))
            if (word_starts(text, at)) return false;
    }
    return true;
}

spm_merges::spm_merges(const llama_vocab * vocab, bool space_prefix) : space_prefix_(space_prefix), words_apart_(spm_words_merge_apart(vocab)) {
    const int n = llama_vocab_n_tokens(vocab);
    for (llama_token id = 0; id < n; ++id) {
        const char * t = llama_vocab_get_text(vocab, id);
        tokens_.set(t ? t : "", id);
        scores_.push_back(llama_vocab_get_score(vocab, id));
    }
    for (int b = 0; b < 256; ++b) {
        char hex[7];
        std::snprintf(hex, sizeof hex, "<0x%02X>", b);
        const char raw[1] = {static_cast<char>(b)};
        const llama_token t = tokens_.find(hex);
        byte_tokens_[static_cast<size_t>(b)] = t >= 0 ? t : tokens_.find(std::string_view(raw, 1));
    }
}

bool spm_merges::tokenize(std::string_view text, std::vector<llama_token> & out) const {
    std::string s;
    s.reserve(text.size() + text.size() / 2 + 3);
    if (space_prefix_) s.append(meta_space);
    for (char c : text) {
        if (c == ' ') s.append(meta_space);
        else s.push_back(c);
    }
    const size_t before = out.size();
    scratch work;
    size_t word = 0;
    for (size_t at = 0; at < s.size(); at += std::min(utf8_len(s[at]), s.size() - at)) {
        if (!words_apart_ || !word_starts(s, at) || at == word) continue;
        if (!merge(std::string_view(s).substr(word, at - word), work, out)) return out.resize(before), false;
        word = at;
    }
    if (word < s.size() && !merge(std::string_view(s).substr(word), work, out)) return out.resize(before), false;
    return true;
}

bool spm_merges::merge(std::string_view s, scratch & work, std::vector<llama_token> & out) const {
    auto & syms = work.symbols;
    auto & queue = work.queue;
    syms.clear();
    queue.clear();
    for (size_t at = 0; at < s.size();) {
        const uint32_t len = static_cast<uint32_t>(std::min(utf8_len(s[at]), s.size() - at));
        const int32_t i = static_cast<int32_t>(syms.size());
        syms.push_back({static_cast<uint32_t>(at), len, i - 1, at + len == s.size() ? -1 : i + 1});
        at += len;
    }
    // The queue's order: highest score first, then the leftmost.
    auto after = [](const pair & a, const pair & b) { return a.score < b.score || (a.score == b.score && a.left > b.left); };
    auto offer = [&](int32_t left, int32_t right) {
        if (left < 0 || right < 0) return;
        const uint32_t size = syms[static_cast<size_t>(left)].n + syms[static_cast<size_t>(right)].n;
        if (size > tokens_.longest()) return;
        const llama_token t = tokens_.find(s.substr(syms[static_cast<size_t>(left)].start, size));
        if (t < 0) return;
        queue.push_back({scores_[static_cast<size_t>(t)], left, right, size});
        std::push_heap(queue.begin(), queue.end(), after);
    };
    for (int32_t i = 1; i < static_cast<int32_t>(syms.size()); ++i) offer(i - 1, i);
    while (!queue.empty()) {
        std::pop_heap(queue.begin(), queue.end(), after);
        const pair p = queue.back();
        queue.pop_back();
        symbol & l = syms[static_cast<size_t>(p.left)];
        symbol & r = syms[static_cast<size_t>(p.right)];
        if (l.n == 0 || r.n == 0 || l.n + r.n != p.size) continue;  // one of them merged since
        l.n += r.n;
        r.n = 0;
        l.next = r.next;
        if (r.next >= 0) syms[static_cast<size_t>(r.next)].prev = p.left;
        offer(l.prev, p.left);
        offer(p.left, l.next);
    }
    for (int32_t i = syms.empty() ? -1 : 0; i >= 0; i = syms[static_cast<size_t>(i)].next) {
        const std::string_view piece = s.substr(syms[static_cast<size_t>(i)].start, syms[static_cast<size_t>(i)].n);
        if (const llama_token t = tokens_.find(piece); t >= 0) {
            out.push_back(t);
            continue;
        }
        for (char c : piece) {
            const llama_token b = byte_tokens_[static_cast<unsigned char>(c)];
            if (b == LLAMA_TOKEN_NULL) return false;
            out.push_back(b);
        }
    }
    return true;
}

}  // namespace rc::llama
