#include "modelfile.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace rc::cli {

namespace {

using ojson = nlohmann::ordered_json;

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

std::string upper(std::string_view s) {
    std::string out(s);
    for (char & c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return out;
}

// "…" with JSON escapes → its text; anything else unchanged.
std::string unquote(std::string_view s) {
    if (s.size() >= 2 && s.front() == '"' && s.back() == '"') {
        auto j = ojson::parse(s, nullptr, false);
        if (j.is_string()) return j.get<std::string>();
        return std::string(s.substr(1, s.size() - 2));
    }
    return std::string(s);
}

error at_line(size_t line, const std::string & problem) {
    return make_error(errc::invalid_argument, "Modelfile line " + std::to_string(line) + ": " + problem);
}

}  // namespace

ojson parse_parameter_value(std::string_view text) {
    text = trim(text);
    if (text == "true") return true;
    if (text == "false") return false;
    int64_t i = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), i);
    if (ec == std::errc() && end == text.data() + text.size() && !text.empty()) return i;
    const std::string s(text);
    char * stop = nullptr;
    double d = std::strtod(s.c_str(), &stop);
    if (!s.empty() && stop == s.c_str() + s.size() && std::isfinite(d) && (std::isdigit(static_cast<unsigned char>(s.back())) || s.back() == '.'))
        return d;
    return unquote(text);
}

status add_parameter(ojson & params, std::string_view key, std::string_view value) {
    if (key.empty() || !std::all_of(key.begin(), key.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }))
        return make_error(errc::invalid_argument, "parameter name '" + std::string(key) + "' must be letters, digits and '_'");
    if (trim(value).empty()) return make_error(errc::invalid_argument, "parameter '" + std::string(key) + "' has no value");
    const std::string k(key);
    if (k == "stop") {
        if (!params.contains(k) || !params[k].is_array()) params[k] = ojson::array();
        params[k].push_back(unquote(trim(value)));  // stop strings stay strings, even "1"
    } else {
        params[k] = parse_parameter_value(value);
    }
    return {};
}

result<modelfile> parse_modelfile(std::string_view text) {
    modelfile out;
    size_t pos = 0, line = 1;
    while (pos < text.size()) {
        size_t eol = text.find('\n', pos);
        if (eol == std::string_view::npos) eol = text.size();
        std::string_view row = trim(text.substr(pos, eol - pos));
        const size_t row_line = line;
        if (row.empty() || row.front() == '#') {
            pos = eol + 1;
            ++line;
            continue;
        }
        size_t word_end = 0;
        while (word_end < row.size() && !std::isspace(static_cast<unsigned char>(row[word_end]))) ++word_end;
        const std::string instruction = upper(row.substr(0, word_end));
        std::string_view rest = trim(row.substr(word_end));

        // A """ value may run over several lines: take it from the raw text.
        std::string value;
        if (rest.starts_with("\"\"\"")) {
            const size_t open = text.find("\"\"\"", pos) + 3;
            const size_t close = text.find("\"\"\"", open);
            if (close == std::string_view::npos) return at_line(row_line, "\"\"\" is never closed");
            value = std::string(text.substr(open, close - open));
            line += static_cast<size_t>(std::count(text.begin() + long(open), text.begin() + long(close), '\n'));
            size_t after = text.find('\n', close + 3);
            if (after == std::string_view::npos) after = text.size();
            if (!trim(text.substr(close + 3, after - close - 3)).empty()) return at_line(line, "unexpected text after the closing \"\"\"");
            eol = after;
        } else {
            value = std::string(rest);
        }
        pos = eol + 1;
        ++line;

        if (instruction == "FROM") {
            if (trim(value).empty()) return at_line(row_line, "FROM needs a GGUF path or a model name");
            out.from.push_back(unquote(trim(value)));
        } else if (instruction == "TEMPLATE") {
            out.template_text = rest.starts_with("\"\"\"") ? value : unquote(value);
        } else if (instruction == "SYSTEM") {
            out.system = rest.starts_with("\"\"\"") ? value : unquote(value);
        } else if (instruction == "PARAMETER") {
            std::string_view kv = value;
            size_t sp = 0;
            while (sp < kv.size() && !std::isspace(static_cast<unsigned char>(kv[sp]))) ++sp;
            if (auto s = add_parameter(out.parameters, kv.substr(0, sp), kv.substr(sp)); !s) return at_line(row_line, s.err().message);
        } else {
            return at_line(row_line, "'" + instruction + "' is not supported (rustycage reads FROM, TEMPLATE, SYSTEM and PARAMETER)");
        }
    }
    if (out.from.empty()) return make_error(errc::invalid_argument, "the Modelfile has no FROM line");
    return out;
}

}  // namespace rc::cli
