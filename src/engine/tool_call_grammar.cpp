#include "engine/tool_call_grammar.h"

#include <algorithm>
#include <cctype>
#include <regex>
#include <vector>

namespace rc::engine {

namespace {

struct span {
    size_t begin = 0, end = 0;
};

// The root rule's right-hand side within `gbnf`, or nothing.
bool find_root(const std::string & gbnf, span & rhs) {
    size_t start = gbnf.rfind("root ::=", 0) == 0 ? 0 : gbnf.find("\nroot ::=");
    if (start == std::string::npos) return false;
    if (start != 0) ++start;
    rhs.begin = start + 8;
    rhs.end = gbnf.find('\n', start);
    if (rhs.end == std::string::npos) rhs.end = gbnf.size();
    return true;
}

bool is_reasoning_marker(std::string literal) {
    std::transform(literal.begin(), literal.end(), literal.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    // "<think>", "<seed:think>", "<|START_THINKING|>", "<|open|>think<|sep|>", and Apriel's
    // "<|begin_assistant|>" … "[BEGIN FINAL RESPONSE]" reasoning section.
    return literal.find("think") != std::string::npos || literal.find("begin_assistant") != std::string::npos;
}

// llama.cpp's free-text rules: `until-N` (any text up to a delimiter), or a rule that is only one.
bool is_free_text(const std::string & gbnf, const std::string & name) {
    static const std::regex until(R"(until-[0-9]+)");
    if (std::regex_match(name, until)) return true;
    const std::string head = "\n" + name + " ::= ";
    size_t at = gbnf.rfind(name + " ::= ", 0) == 0 ? 0 : gbnf.find(head);
    if (at == std::string::npos) return false;
    at = gbnf.find(" ::= ", at) + 5;
    size_t end = gbnf.find('\n', at);
    return std::regex_match(gbnf.substr(at, end == std::string::npos ? std::string::npos : end - at), until);
}

bool is_name_char(char c) {
    return std::isalnum((unsigned char)c) || c == '-' || c == '_';
}

}  // namespace

std::string require_immediate_tool_call(const std::string & gbnf, bool drop_repeated, bool keep_reasoning) {
    span rhs;
    if (!find_root(gbnf, rhs)) return gbnf;
    const std::string root = gbnf.substr(rhs.begin, rhs.end - rhs.begin);
    // Walks the root's tokens: string literals, character classes, groups, names. Each alternative
    // of a group remembers its first literal (its opening marker): a free-text name under a
    // reasoning marker is reasoning and stays (with thinking off the template's generation prompt
    // has already opened and closed the block, and the grammar must still accept that); any other
    // is text before the call, dropped. So is anything
    // repeated zero or more times before the call when `drop_repeated` (gpt-oss's `(start any)*`
    // messages, Gemma 4's `message*`): the call comes first.
    struct group {
        size_t begin;
        std::string opening;
    };
    std::vector<group> groups{{0, ""}};
    std::vector<span> drop;
    for (size_t i = 0; i < root.size();) {
        const char c = root[i];
        if (c == '"' || c == '[') {
            const char close = c == '"' ? '"' : ']';
            size_t j = i + 1;
            while (j < root.size() && root[j] != close) j += root[j] == '\\' ? 2 : 1;
            j = std::min(j + 1, root.size());
            if (c == '"' && groups.back().opening.empty()) groups.back().opening = root.substr(i + 1, j - i - 2);
            i = j;
        } else if (c == '(') {
            groups.push_back({i, ""});
            ++i;
        } else if (c == ')') {
            if (groups.size() > 1) {
                if (drop_repeated && i + 1 < root.size() && root[i + 1] == '*') drop.push_back({groups.back().begin, i + 2});
                groups.pop_back();
            }
            ++i;
        } else if (c == '|') {
            groups.back().opening.clear();
            ++i;
        } else if (is_name_char(c)) {
            size_t j = i;
            while (j < root.size() && is_name_char(root[j])) ++j;
            const bool quantified = j < root.size() && (root[j] == '?' || root[j] == '*');
            const bool reasoning = keep_reasoning && is_reasoning_marker(groups.back().opening);
            if ((drop_repeated && j < root.size() && root[j] == '*') || (is_free_text(gbnf, root.substr(i, j - i)) && !reasoning)) {
                drop.push_back({i, quantified ? j + 1 : j});
            }
            i = j;
        } else {
            ++i;
        }
    }
    if (drop.empty()) return gbnf;
    // Spans come in order of their ends; one inside a later (enclosing) span goes with it.
    std::sort(drop.begin(), drop.end(), [](const span & a, const span & b) { return a.begin < b.begin || (a.begin == b.begin && a.end > b.end); });
    std::string out;
    size_t at = 0;
    for (const auto & d : drop) {
        if (d.begin < at) continue;
        out.append(root, at, d.begin - at);
        at = d.end;
    }
    out.append(root, at, std::string::npos);
    return gbnf.substr(0, rhs.begin) + out + gbnf.substr(rhs.end);
}

std::string drop_free_text_in_repeated(const std::string & gbnf) {
    span rhs;
    if (!find_root(gbnf, rhs)) return gbnf;
    const std::string root = gbnf.substr(rhs.begin, rhs.end - rhs.begin);
    static const std::regex repeated_name(R"(([A-Za-z0-9_-]+)\*)");
    static const std::regex name(R"([A-Za-z0-9_-]+)");
    static const std::regex optional_group(R"(\(\s*([A-Za-z0-9_-]+)\s*\|\s*\))");  // (x | ) -> x
    std::string out = gbnf;
    for (std::sregex_iterator it(root.begin(), root.end(), repeated_name), end; it != end; ++it) {
        const std::string rule = (*it)[1];
        const std::string head = rule + " ::= ";
        size_t at = out.rfind(head, 0) == 0 ? 0 : out.find("\n" + head);
        if (at == std::string::npos) continue;
        at = out.find(head, at) + head.size();
        const size_t body_end = std::min(out.find('\n', at), out.size());
        const std::string body = out.substr(at, body_end - at);
        std::string kept;
        size_t last = 0;
        for (std::sregex_iterator n(body.begin(), body.end(), name), nend; n != nend; ++n) {
            if (!is_free_text(gbnf, n->str())) continue;
            kept.append(body, last, static_cast<size_t>(n->position()) - last);
            last = static_cast<size_t>(n->position() + n->length());
        }
        kept.append(body, last, std::string::npos);
        kept = std::regex_replace(kept, optional_group, "$1");
        kept.erase(kept.find_last_not_of(' ') + 1);
        if (kept == body || kept.find_first_not_of(" ()|") == std::string::npos) continue;
        out = out.substr(0, at) + kept + out.substr(body_end);
        // One such block at most: the one a generation prompt may hold (more would let the model
        // think on without end, with thinking off).
        span r;
        find_root(out, r);
        const size_t star = out.find(rule + "*", r.begin);
        if (star != std::string::npos && star < r.end) out[star + rule.size()] = '?';
    }
    return out;
}

std::string allow_one_tool_call(const std::string & gbnf) {
    // Some of llama.cpp's tool-call grammars repeat the call regardless of parallel_tool_calls:
    //   tool-calls ::= (tool-call space)+
    // Without parallel calls the reply holds exactly one, so the repetition is dropped.
    static const std::regex repeated(R"((^|\n)tool-calls ::= \(tool-call space\)\+(\n|$))");
    return std::regex_replace(gbnf, repeated, "$1tool-calls ::= tool-call space$2");
}

}  // namespace rc::engine
