#include "util/ascii.h"

namespace rc {

namespace {

char fold(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

}  // namespace

std::string ascii_lower(std::string_view s) {
    std::string out(s);
    for (char & c : out) c = fold(c);
    return out;
}

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (fold(a[i]) != fold(b[i])) return false;
    return true;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    return s;
}

}  // namespace rc
