#include "engine/schema_support.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <utility>
#include <vector>

namespace rc::engine {

namespace {

error unsupported(const std::string & pattern, const std::string & what) {
    constexpr size_t max_quote = 60;
    std::string shown = pattern.size() > max_quote ? pattern.substr(0, max_quote) + "…" : pattern;
    return make_error(errc::invalid_argument, "the schema's pattern " + nlohmann::json(shown).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
                                                  " uses " + what + ", which constrained decoding cannot express; rewrite the pattern without it");
}

error invalid(const std::string & what) { return make_error(errc::invalid_argument, "invalid JSON schema: " + what); }

std::string quoted(const std::string & text) {
    constexpr size_t max_quote = 60;
    std::string shown = text.size() > max_quote ? text.substr(0, max_quote) + "…" : text;
    return nlohmann::json(shown).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A repetition "{m}", "{m,}" or "{m,n}" opening at p[at]: m ≤ n, and neither past what a grammar
// expands. (llama.cpp's converter turned "{5,2}" into a grammar whose parse never ended.)
status check_repetition(const std::string & p, size_t at, uint64_t & copies) {
    copies = 1;
    size_t close = p.find('}', at);
    if (close == std::string::npos) return {};  // the converter reports it
    const std::string inner = p.substr(at + 1, close - at - 1);
    const size_t comma = inner.find(',');
    auto number = [](const std::string & digits, uint64_t & out) {
        if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) return false;
        out = std::stoull(digits);
        return true;
    };
    uint64_t lo = 0, hi = 0;
    const std::string first = inner.substr(0, comma);
    const std::string second = comma == std::string::npos ? first : inner.substr(comma + 1);
    if (!first.empty() && !number(first, lo)) return invalid("the pattern " + quoted(p) + " has a repetition {" + inner + "} that is not {m}, {m,} or {m,n}");
    if (!second.empty() && !number(second, hi)) return invalid("the pattern " + quoted(p) + " has a repetition {" + inner + "} that is not {m}, {m,} or {m,n}");
    if (!second.empty() && lo > hi) return invalid("the pattern " + quoted(p) + " repeats {" + inner + "}: at least " + std::to_string(lo) + " but at most " + std::to_string(hi));
    if (lo > max_schema_repetition || (!second.empty() && hi > max_schema_repetition))
        return invalid("the pattern " + quoted(p) + " repeats {" + inner + "}: more than " + std::to_string(max_schema_repetition) + " times");
    copies = std::max<uint64_t>(1, std::max(lo, second.empty() ? lo : hi));  // what the converter writes out
    return {};
}

// minX ≤ maxX for one pair of size keywords, each an integer in [0, 2^31), and the minimum not past
// what a grammar expands (the converter writes "{min,max}" for them). A key whose value is not a
// number is not this keyword (a property named "minLength" under "properties" holds a schema).
status check_size_pair(const nlohmann::json & schema, const char * min_key, const char * max_key) {
    int64_t lo = 0, hi = INT32_MAX;
    for (const char * key : {min_key, max_key}) {
        auto it = schema.find(key);
        if (it == schema.end() || !it->is_number()) continue;
        if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > INT32_MAX)
            return invalid(std::string("'") + key + "' must be an integer from 0 to " + std::to_string(INT32_MAX));
        (key == min_key ? lo : hi) = it->get<int64_t>();
    }
    if (lo > hi) return invalid(std::string("'") + min_key + "' is " + std::to_string(lo) + ", more than '" + max_key + "' " + std::to_string(hi));
    if (lo > static_cast<int64_t>(max_schema_repetition))
        return invalid(std::string("'") + min_key + "' is " + std::to_string(lo) + "; constrained decoding repeats at most " + std::to_string(max_schema_repetition) + " times");
    return {};
}

// minimum ≤ maximum (the converter builds digit ranges from them), when both are numbers.
status check_bounds(const nlohmann::json & schema) {
    auto lo = schema.find("minimum"), hi = schema.find("maximum");
    if (lo == schema.end() || hi == schema.end() || !lo->is_number() || !hi->is_number()) return {};
    if (lo->get<double>() > hi->get<double>())
        return invalid("'minimum' " + lo->dump() + " is more than 'maximum' " + hi->dump());
    return {};
}

// The converter orders an object's optional properties with a rule for every suffix of them: its
// time grows with the cube of their number (800: 0.6 s, 1,600: 5 s, 2,400: 19 s, all of one core,
// going on after the client left). Counted before it runs.
status check_optional_properties(const nlohmann::json & schema) {
    auto props = schema.find("properties");
    if (props == schema.end() || !props->is_object()) return {};
    size_t required = 0;
    if (auto req = schema.find("required"); req != schema.end() && req->is_array())
        for (const auto & name : *req) required += name.is_string() && props->contains(name.get<std::string>()) ? 1 : 0;
    const size_t optional = props->size() - std::min(required, props->size());
    if (optional > max_optional_properties)
        return invalid("an object has " + std::to_string(optional) + " optional properties (at most " + std::to_string(max_optional_properties) +
                       "): mark them required or split the object");
    return {};
}

}  // namespace

status check_pattern_support(const std::string & p) {
    bool in_class = false;
    // Repetitions nest by multiplying: the converter writes a group's {m,n} out as n copies of the
    // group, each holding its own copies (((a{0,9}){0,9})…){0,9} six deep is 9^6 = 531,441 copies of
    // `a`, a grammar whose every token stalled the engine. `inside` holds, per open group, the most
    // copies anything in it makes; `closed` those of the group that just ended (0: the last atom was
    // not a group).
    std::vector<uint64_t> inside{1};
    uint64_t closed = 0;
    for (size_t i = 0; i < p.size(); ++i) {
        const char c = p[i];
        if (c != '{' && c != ')' && !in_class) closed = 0;
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
        if (c == '{') {
            uint64_t copies = 1;
            if (auto st = check_repetition(p, i, copies); !st) return st;
            const uint64_t nested = std::max<uint64_t>(1, closed) * copies;  // both ≤ 2000: no overflow
            if (nested > max_schema_repetition)
                return invalid("the pattern " + quoted(p) + " nests repetitions that write out " + std::to_string(nested) + " copies (at most " +
                               std::to_string(max_schema_repetition) + ")");
            inside.back() = std::max(inside.back(), nested);
            closed = 0;
            continue;
        }
        if (c == '(') inside.push_back(1);
        if (c == ')' && inside.size() > 1) {
            closed = inside.back();
            inside.pop_back();
            inside.back() = std::max(inside.back(), closed);
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
            for (auto [lo, hi] : {std::pair{"minLength", "maxLength"}, std::pair{"minItems", "maxItems"}, std::pair{"minProperties", "maxProperties"}}) {
                if (auto st = check_size_pair(*v, lo, hi); !st) return st;
            }
            if (auto st = check_bounds(*v); !st) return st;
            if (auto st = check_optional_properties(*v); !st) return st;
        }
        if (v->is_structured()) {
            for (const auto & child : *v) todo.push_back(&child);
        }
    }
    return {};
}

}  // namespace rc::engine
