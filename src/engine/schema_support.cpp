#include "engine/schema_support.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <vector>

namespace rc::engine {

namespace {

error unsupported(const std::string & pattern, const std::string & what) {
    constexpr size_t max_quote = 60;
    std::string shown = pattern.size() > max_quote ? pattern.substr(0, max_quote) + "…" : pattern;
    return make_error(errc::invalid_argument, "the schema's pattern " + nlohmann::json(shown).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
                                                  " uses " + what + ", which constrained decoding cannot express; rewrite the pattern without it");
}

}  // namespace

status check_pattern_support(const std::string & p) {
    bool in_class = false;
    for (size_t i = 0; i < p.size(); ++i) {
        const char c = p[i];
        if (c == '\\' && i + 1 < p.size()) {
            const char n = p[i + 1];
            if (!in_class && n >= '1' && n <= '9') return unsupported(p, std::string("a back-reference (\\") + n + ")");
            if (!in_class && n == 'k' && i + 2 < p.size() && p[i + 2] == '<') return unsupported(p, "a named back-reference (\\k<…>)");
            ++i;  // the escaped character is literal
            continue;
        }
        if (in_class) {
            if (c == ']') in_class = false;
            continue;
        }
        if (c == '[') {
            in_class = true;
            if (i + 1 < p.size() && p[i + 1] == ']') ++i;  // "[]…]": a leading ] is literal
            continue;
        }
        if (c == '(' && i + 2 < p.size() && p[i + 1] == '?') {
            const char k = p[i + 2];
            if (k == '=' || k == '!') return unsupported(p, "a lookahead ((?=…) or (?!…))");
            if (k == '<' && i + 3 < p.size() && (p[i + 3] == '=' || p[i + 3] == '!')) return unsupported(p, "a lookbehind ((?<=…) or (?<!…))");
            if (k != ':') return unsupported(p, std::string("the group syntax (?") + k + "…) (only (?:…) is understood)");
        }
    }
    return {};
}

status check_schema_support(const std::string & json_schema) {
    auto root = nlohmann::json::parse(json_schema, nullptr, /*allow_exceptions=*/false);
    if (root.is_discarded()) return {};
    // Every "pattern" string anywhere: in properties, items, anyOf branches, $defs, ...
    std::vector<const nlohmann::json *> todo{&root};
    while (!todo.empty()) {
        const nlohmann::json * v = todo.back();
        todo.pop_back();
        if (v->is_object()) {
            if (auto it = v->find("pattern"); it != v->end() && it->is_string()) {
                if (auto st = check_pattern_support(it->get<std::string>()); !st) return st;
            }
        }
        if (v->is_structured()) {
            for (const auto & child : *v) todo.push_back(&child);
        }
    }
    return {};
}

}  // namespace rc::engine
