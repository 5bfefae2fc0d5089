// The one file that reads llama.cpp's internal grammar representation (src/llama-grammar.h of
// the pinned tree): the public API builds and applies grammars but cannot say what they cost, and a
// parser of our own could read a grammar differently from the one that runs it.
#include "engine/grammar_cost.h"

#include <llama-grammar.h>

#include <algorithm>
#include <unordered_map>

namespace rc::engine {

namespace {

constexpr uint64_t k_saturated = uint64_t(1) << 62;

uint64_t add(uint64_t a, uint64_t b) { return std::min(k_saturated, a + b); }

bool end_of_sequence(const llama_grammar_element * e) { return e->type == LLAMA_GRETYPE_END || e->type == LLAMA_GRETYPE_ALT; }

// Mirrors llama_grammar_advance_stack: how many stacks expanding position `pos` yields. A rule
// reference expands into one stack per alternative of the rule, each continuing at its first
// element; an empty alternative continues after the reference. Memoized per element; a rule met
// again while it is being expanded (recursion llama.cpp refuses when it is left recursion) counts 1.
class width_of {
  public:
    explicit width_of(const llama_grammar_rules & rules) : rules_(rules) {}

    uint64_t at(const llama_grammar_element * pos) {
        if (end_of_sequence(pos) || pos->type != LLAMA_GRETYPE_RULE_REF) return 1;
        auto [it, fresh] = memo_.try_emplace(pos, 0);
        if (!fresh) return it->second == 0 ? 1 : it->second;  // 0: being expanded right now
        const uint64_t w = pos->value < rules_.size() ? of_rule(rules_[pos->value], pos + 1) : 1;
        memo_[pos] = w;
        return w;
    }

    // Expanding `rule` at its start: one stack per alternative (an empty one continues at `after`,
    // or with what follows in the context when `after` is null).
    uint64_t of_rule(const llama_grammar_rule & rule, const llama_grammar_element * after) {
        if (rule.empty()) return 1;  // a symbol without a definition (the parser refuses those)
        uint64_t w = 0;
        const llama_grammar_element * alt = rule.data();
        for (;;) {
            w = add(w, !end_of_sequence(alt) ? at(alt) : after ? at(after) : 1);
            while (!end_of_sequence(alt)) ++alt;
            if (alt->type != LLAMA_GRETYPE_ALT) break;
            ++alt;
        }
        return std::max<uint64_t>(w, 1);
    }

  private:
    const llama_grammar_rules & rules_;
    std::unordered_map<const llama_grammar_element *, uint64_t> memo_;
};

}  // namespace

result<grammar_cost> measure_grammar(const std::string & gbnf) {
    llama_grammar_parser parser;
    if (!parser.parse(gbnf.c_str()) || parser.rules.empty()) return make_error(errc::invalid_argument, "grammar does not parse");
    grammar_cost out;
    out.rules = parser.rules.size();
    width_of width(parser.rules);
    // Every rule expanded at its start (the start rule is the grammar's first state), and every
    // element a stack can point at: each position of every alternative of every rule.
    for (const auto & rule : parser.rules) {
        if (!rule.empty()) out.widest_point = std::max(out.widest_point, width.of_rule(rule, nullptr));
        for (const auto & e : rule) {
            if (end_of_sequence(&e)) continue;
            out.widest_point = std::max(out.widest_point, width.at(&e));
        }
    }
    return out;
}

size_t gbnf_nesting(const std::string & gbnf) {
    size_t depth = 0, deepest = 0;
    for (size_t i = 0; i < gbnf.size(); ++i) {
        const char c = gbnf[i];
        if (c == '"' || c == '[') {  // a string or a character class: up to its unescaped end
            const char close = c == '"' ? '"' : ']';
            for (++i; i < gbnf.size() && gbnf[i] != close; ++i) {
                if (gbnf[i] == '\\') ++i;
            }
        } else if (c == '#') {
            while (i < gbnf.size() && gbnf[i] != '\n') ++i;
        } else if (c == '(') {
            deepest = std::max(deepest, ++depth);
        } else if (c == ')' && depth > 0) {
            --depth;
        }
    }
    return deepest;
}

}  // namespace rc::engine
