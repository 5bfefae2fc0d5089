#include "llama/piece_tokenizer.h"

#include <common.h>

#include <algorithm>
#include <cctype>

#include "llama/bpe_merges.h"
#include "llama/spm_merges.h"

namespace rc::llama {

// Every special token's text (what llama.cpp's partition looks for), as a byte trie: the longest
// special token starting at a position in O(its length).
struct piece_tokenizer::trie {
    struct node {
        std::vector<std::pair<unsigned char, int32_t>> next;  // sorted by byte
        int32_t token = -1;                                   // a special token ends here
        bool cut = false;                                     // ... and a piece may start with it
        bool strips = false;                                  // ... it strips the whitespace beside it
    };
    std::vector<node> nodes{1};
    size_t longest = 0;
    bool starts[256] = {};  // a special token starts with this byte

    void add(std::string_view text, llama_token id, bool cut, bool strips) {
        int32_t at = 0;
        for (unsigned char c : text) {
            auto & nx = nodes[static_cast<size_t>(at)].next;
            auto it = std::lower_bound(nx.begin(), nx.end(), c, [](const auto & e, unsigned char b) { return e.first < b; });
            if (it == nx.end() || it->first != c) {
                it = nx.insert(it, {c, static_cast<int32_t>(nodes.size())});
                nodes.emplace_back();
            }
            at = it->second;
        }
        auto & n = nodes[static_cast<size_t>(at)];
        // Two tokens with one text: which one the partition picks is not ours to know; cut at neither.
        n.cut = n.token < 0 && cut;
        n.token = id;
        n.strips = strips;
        longest = std::max(longest, text.size());
        starts[static_cast<unsigned char>(text.front())] = true;
    }

    struct match {
        size_t length = 0;  // 0: none
        bool cut = false;
        llama_token token = -1;
        bool strips = false;
    };
    match longest_at(std::string_view text, size_t pos) const {
        match m;
        int32_t at = 0;
        for (size_t i = pos; i < text.size(); ++i) {
            const auto & nx = nodes[static_cast<size_t>(at)].next;
            const unsigned char c = static_cast<unsigned char>(text[i]);
            auto it = std::lower_bound(nx.begin(), nx.end(), c, [](const auto & e, unsigned char b) { return e.first < b; });
            if (it == nx.end() || it->first != c) break;
            at = it->second;
            const auto & n = nodes[static_cast<size_t>(at)];
            if (n.token >= 0) m = {i + 1 - pos, n.cut, n.token, n.strips};
        }
        return m;
    }

    // Any special-token occurrence starting at or after `from`.
    bool any_from(std::string_view text, size_t from) const {
        for (size_t q = from; q < text.size(); ++q)
            if (starts[static_cast<unsigned char>(text[q])] && longest_at(text, q).length > 0) return true;
        return false;
    }
};

piece_tokenizer::piece_tokenizer(const llama_vocab * vocab, std::string_view tokenizer_model, size_t max_bytes)
    : vocab_(vocab), specials_(std::make_unique<trie>()), max_bytes_(max_bytes) {
    const auto type = llama_vocab_type(vocab);
    splits_ = (type == LLAMA_VOCAB_TYPE_SPM || (type == LLAMA_VOCAB_TYPE_BPE && tokenizer_model != "hybriddna" && tokenizer_model != "whitespace")) &&
              !llama_vocab_get_add_eos(vocab);
    const int n = llama_vocab_n_tokens(vocab);
    for (llama_token id = 0; splits_ && id < n; ++id) {
        const auto attr = llama_vocab_get_attr(vocab, id);
        if (!(attr & (LLAMA_TOKEN_ATTR_CONTROL | LLAMA_TOKEN_ATTR_USER_DEFINED | LLAMA_TOKEN_ATTR_UNKNOWN))) continue;
        const char * t = llama_vocab_get_text(vocab, id);
        const std::string_view text = t ? t : "";
        if (text.empty()) {
            splits_ = false;  // an empty special token: llama.cpp's partition of it is not one we can follow
            break;
        }
        const bool cut = (attr & (LLAMA_TOKEN_ATTR_CONTROL | LLAMA_TOKEN_ATTR_USER_DEFINED)) && !(attr & LLAMA_TOKEN_ATTR_LSTRIP) &&
                         !std::isspace(static_cast<unsigned char>(text.front())) && !std::isspace(static_cast<unsigned char>(text.back()));
        specials_->add(text, id, cut, (attr & (LLAMA_TOKEN_ATTR_LSTRIP | LLAMA_TOKEN_ATTR_RSTRIP)) != 0);
    }
    if (!splits_) return;
    bpe_ = type == LLAMA_VOCAB_TYPE_BPE;
    text_cuts_ = true;
    if (!bpe_) {
        static constexpr std::string_view meta_space = "\xE2\x96\x81";  // "▁"
        text_cuts_ = spm_words_merge_apart(vocab);
        const auto a = common_tokenize(vocab, "a", false, false);
        const char * first = a.empty() ? nullptr : llama_vocab_get_text(vocab, a.front());
        space_prefix_ = first && std::string_view(first).starts_with(meta_space);
    }
    use_merges(vocab);
    if (text_cuts_) {
        // Whole against cut on a probe of prose, punctuation, numbers, non-ASCII and whitespace runs.
        static const char * words[] = {"The", "quick", "brown", "fox,", "12", "jumps", "over", "345", "lazy", "dogs.", "Don't", "stop;", "it's",
                                       "\"quoted\"", "(really)", "\u2014", "na\u00efve", "caf\u00e9", "\u2713", "\u4f60\u597d", "x\ty", "a  b",
                                       "c\n d", "e-mail", "foo_bar", "3.14", "$100", "#tag", "@user", "https://x.org/a?b=c", "\u00bfQu\u00e9?", "A.B."};
        std::string probe;
        for (size_t i = 0; probe.size() < 4096; ++i) probe += std::string(i ? " " : "") + words[(i * 7 + i / 32) % std::size(words)];
        for (const bool parse_special : {false, true})
            if (tokenize(probe, true, parse_special) != tokenize_whole(probe, true, parse_special)) text_cuts_ = false;
        std::lock_guard<std::mutex> lock(mutex_);
        kept_.clear();
        ages_.clear();
        stats_ = {};
    }
}

piece_tokenizer::~piece_tokenizer() = default;

bool piece_tokenizer::in_special(std::string_view text, size_t from, size_t to) const {
    for (size_t q = from >= specials_->longest ? from - specials_->longest + 1 : 0; q < to; ++q) {
        const auto m = specials_->longest_at(text, q);
        if (m.length > 0 && q + m.length > from) return true;
    }
    return false;
}

void piece_tokenizer::add_text_cuts(std::string_view text, size_t begin, size_t end, std::vector<size_t> & out) const {
    size_t last = begin;
    for (size_t p = begin + min_piece_bytes; p + 1 < end; ++p) {
        if (text[p] != ' ' || p < last + min_piece_bytes) continue;
        const unsigned char prev = static_cast<unsigned char>(text[p - 1]), next = static_cast<unsigned char>(text[p + 1]);
        if (std::isspace(prev) || std::isspace(next)) continue;
        if (bpe_ && !(prev < 0x80 && std::isgraph(prev) && next < 0x80 && std::isalpha(next))) continue;
        // Chosen by the 16 bytes before the space, not by the distance from the start: a prompt whose
        // beginning changes (a system prompt moved to the last turn) keeps the cuts that follow.
        uint32_t h = 2166136261u;
        for (size_t i = p - std::min<size_t>(16, p - begin); i < p; ++i) h = (h ^ static_cast<unsigned char>(text[i])) * 16777619u;
        if (h % cut_one_space_in != 0) continue;
        if (in_special(text, p - 1, p + 2)) continue;
        out.push_back(p);
        last = p;
    }
}

std::vector<size_t> piece_tokenizer::cuts(std::string_view text, bool parse_special) const {
    std::vector<size_t> out;
    if (!splits_) return out;
    if (!parse_special) {  // llama.cpp's partition leaves control tokens as text: no cut before them
        if (text_cuts_) add_text_cuts(text, 0, text.size(), out);
        return out;
    }
    const bool * starts = specials_->starts;
    for (size_t p = 1; p < text.size(); ++p) {
        if (!starts[static_cast<unsigned char>(text[p])]) continue;
        const auto s = specials_->longest_at(text, p);
        if (s.length == 0 || !s.cut) continue;
        // No other occurrence at least as long overlaps [p, p + |S|): one starting before p and
        // reaching into it, or one starting inside it.
        bool clear = true;
        const size_t from = p >= specials_->longest ? p - specials_->longest + 1 : 0;
        for (size_t q = from; clear && q < p + s.length; ++q) {
            if (q == p || !starts[static_cast<unsigned char>(text[q])]) continue;
            const auto t = specials_->longest_at(text, q);
            if (t.length >= s.length && q + t.length > p) clear = false;
        }
        if (!clear) continue;
        out.push_back(p);
        p += s.length - 1;
    }
    if (!text_cuts_) return out;
    std::vector<size_t> all;
    size_t begin = 0;
    for (size_t i = 0; i <= out.size(); ++i) {
        add_text_cuts(text, begin, i < out.size() ? out[i] : text.size(), all);
        if (i < out.size()) all.push_back(begin = out[i]);
    }
    return all;
}

void piece_tokenizer::use_merges(const llama_vocab * vocab) {
    if (bpe_) merges_ = bpe_merges::make(vocab);
    else merges_ = std::make_unique<spm_merges>(vocab, space_prefix_);
    if (!merges_) return;
    // Raw fragments of every kind a prompt holds, each against llama.cpp's own.
    static const char * probe[] = {"Hello world", "  two  spaces and\ttabs\nnew lines\n\n", "na\u00efve caf\u00e9 \u2014 \u201cquoted\u201d \u2713",
                                   "\u4f60\u597d\uff0c\u4e16\u754c", "emoji \U0001F999\U0001F999 and a cut one \xF0\x9F", "x\x01y\x7F\xff\xfe",
                                   "1234567890 3.14159 $100 #tag @user", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "The quick brown fox jumps over the lazy dog.",
                                   "don't won't it's", " ", "\u2581literal meta space", "river123 bridge45 archive6 orchard999"};
    for (const char * p : probe) {
        if (specials_->any_from(p, 0)) continue;
        std::vector<llama_token> mine;
        if (merges_->tokenize(p, mine) && mine != tokenize_whole(p, false, false)) {
            merges_.reset();
            return;
        }
    }
}

std::optional<std::vector<llama_token>> piece_tokenizer::merged_piece(std::string_view text, bool bos, bool parse_special) const {
    std::vector<llama_token> out;
    if (bos && llama_vocab_get_add_bos(vocab_)) out.push_back(llama_vocab_bos(vocab_));
    size_t at = 0;
    if (parse_special) {
        const auto lead = specials_->longest_at(text, 0);
        if (lead.length > 0 && lead.strips) return std::nullopt;
        if (lead.length > 0) out.push_back(lead.token);
        at = lead.length;
    }
    if (specials_->any_from(text, at == 0 ? 0 : 1)) return std::nullopt;
    if (at < text.size() && !merges_->tokenize(text.substr(at), out)) return std::nullopt;
    return out;
}

std::vector<llama_token> piece_tokenizer::tokenize_whole(const std::string & text, bool add_special, bool parse_special) const {
    return common_tokenize(vocab_, text, add_special, parse_special);
}

std::shared_ptr<const std::vector<llama_token>> piece_tokenizer::piece(std::string_view text, bool first, bool add_special, bool parse_special) const {
    const bool bos = first && add_special;  // only the first piece takes the vocabulary's BOS
    const char flags = static_cast<char>((bos ? 1 : 0) | (parse_special ? 2 : 0));
    const uint64_t hash = std::hash<std::string_view>{}(text) ^ (static_cast<uint64_t>(flags) * 0x9e3779b97f4a7c15ull);
    const auto same = [&](const std::string & key) { return key.size() == text.size() + 1 && key[0] == flags && std::string_view(key).substr(1) == text; };
    {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = kept_.find(hash);
        if (it != kept_.end() && same(it->second.key)) {
            ages_.splice(ages_.begin(), ages_, it->second.age);
            ++stats_.hits;
            return it->second.tokens;
        }
        ++stats_.misses;
    }
    auto merged = merges_ ? merged_piece(text, bos, parse_special) : std::nullopt;
    auto tokens = std::make_shared<const std::vector<llama_token>>(merged ? std::move(*merged) : tokenize_whole(std::string(text), bos, parse_special));
    const size_t cost = text.size() + 1 + tokens->size() * sizeof(llama_token) + 112;
    if (cost > max_bytes_) return tokens;
    std::lock_guard<std::mutex> lock(mutex_);
    if (kept_.contains(hash)) return tokens;  // kept meanwhile by another thread (or a colliding piece: this one is not kept)
    ages_.push_front(hash);
    std::string key;
    key.reserve(text.size() + 1);
    key.push_back(flags);
    key.append(text);
    kept_.emplace(hash, entry{std::move(key), tokens, ages_.begin()});
    stats_.bytes += cost;
    while (stats_.bytes > max_bytes_ && !ages_.empty()) {
        auto old = kept_.find(ages_.back());
        stats_.bytes -= old->second.key.size() + old->second.tokens->size() * sizeof(llama_token) + 112;
        kept_.erase(old);
        ages_.pop_back();
    }
    stats_.entries = kept_.size();
    return tokens;
}

std::vector<llama_token> piece_tokenizer::tokenize(const std::string & text, bool add_special, bool parse_special) const {
    const auto at = cuts(text, parse_special);
    std::vector<llama_token> out;
    out.reserve(text.size() / 3 + 8);
    size_t begin = 0;
    for (size_t i = 0; i <= at.size(); ++i) {
        const size_t end = i < at.size() ? at[i] : text.size();
        const bool raw_cut = i > 0 && text[begin] == ' ';  // a special token never starts with a space
        const size_t from = raw_cut && space_prefix_ ? begin + 1 : begin;  // llama.cpp puts the "▁" back
        const auto kept = piece(std::string_view(text).substr(from, end - from), i == 0, add_special, parse_special);
        const auto & part = *kept;
        if (i > 0 && !raw_cut) {
            const auto s = specials_->longest_at(text, begin);
            const char * t = part.empty() ? nullptr : llama_vocab_get_text(vocab_, part.front());
            if (!t || std::string_view(t) != std::string_view(text).substr(begin, s.length)) return tokenize_whole(text, add_special, parse_special);
        }
        out.insert(out.end(), part.begin(), part.end());
        begin = end;
    }
    return out;
}

piece_tokenizer::stats piece_tokenizer::counters() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
}

}  // namespace rc::llama
