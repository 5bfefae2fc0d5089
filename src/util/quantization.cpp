#include "util/quantization.h"

#include <algorithm>
#include <cctype>

namespace rc::quant {

namespace {

struct quant_info {
    const char * name;
    int file_type;  // llama_ftype, -1 when the name has no file type of its own
    double bpw;
};

// Ordered by preference (see preference_order()).
const quant_info k_quants[] = {
    {"Q4_K_M", 15, 4.89}, {"Q4_K_S", 14, 4.58}, {"Q5_K_M", 17, 5.70}, {"Q5_K_S", 16, 5.54},
    {"IQ4_XS", 30, 4.25}, {"IQ4_NL", 25, 4.50}, {"Q6_K", 18, 6.56},   {"Q8_0", 7, 8.50},
    {"Q4_0", 2, 4.55},    {"Q4_1", 3, 5.00},    {"Q5_0", 8, 5.50},    {"Q5_1", 9, 6.00},
    {"Q3_K_L", 13, 4.27}, {"Q3_K_M", 12, 3.91}, {"IQ3_M", 27, 3.70},  {"IQ3_S", 26, 3.44},
    {"Q3_K_S", 11, 3.50}, {"IQ3_XS", 22, 3.30}, {"IQ3_XXS", 23, 3.06}, {"Q2_K", 10, 3.35},
    {"Q2_K_S", 21, 3.18}, {"IQ2_M", 29, 2.70},  {"IQ2_S", 28, 2.50},  {"IQ2_XS", 20, 2.31},
    {"IQ2_XXS", 19, 2.06}, {"IQ1_M", 31, 1.75}, {"IQ1_S", 24, 1.56},  {"TQ2_0", 37, 2.06},
    {"TQ1_0", 36, 1.69},  {"MXFP4", 38, 4.25}, {"NVFP4", 39, 4.50}, {"Q1_0", 40, 1.50},
    {"Q2_0", 41, 2.50},   {"BF16", 32, 16.0},  {"F16", 1, 16.0},     {"F32", 0, 32.0},
};

std::string upper(std::string_view s) {
    std::string out(s);
    for (char & c : out) c = (char) std::toupper((unsigned char) c);
    return out;
}

const quant_info * find(std::string_view name) {
    std::string u = upper(name);
    for (const auto & q : k_quants)
        if (u == q.name) return &q;
    return nullptr;
}

bool is_delimiter(char c) { return c == '-' || c == '.' || c == '_' || c == '/' || c == ' '; }

}  // namespace

std::optional<std::string> name_from_file_type(int64_t file_type) {
    for (const auto & q : k_quants)
        if (q.file_type == file_type) return std::string(q.name);
    return std::nullopt;
}

std::optional<std::string> canonical(std::string_view name) {
    if (const auto * q = find(name)) return std::string(q->name);
    return std::nullopt;
}

std::optional<std::string> name_from_filename(std::string_view filename) {
    std::string u = upper(filename);
    if (auto slash = u.find_last_of('/'); slash != std::string::npos) u = u.substr(slash + 1);
    // The longest name occurring as a delimited token wins (Q4_K_M over Q4_K, IQ3_XXS over IQ3_XS);
    // later occurrences win ties, since the quantization is usually the last token.
    const quant_info * best = nullptr;
    size_t best_pos = 0;
    for (const auto & q : k_quants) {
        std::string_view n = q.name;
        for (size_t pos = u.find(n); pos != std::string::npos; pos = u.find(n, pos + 1)) {
            bool left = pos == 0 || is_delimiter(u[pos - 1]);
            size_t end = pos + n.size();
            bool right = end == u.size() || is_delimiter(u[end]);
            // "Q4_K_M" must not match inside "Q4_K_M_L": '_' after a name continues it.
            if (end < u.size() && u[end] == '_') right = false;
            if (!left || !right) continue;
            if (!best || n.size() > std::string_view(best->name).size() || (n.size() == std::string_view(best->name).size() && pos > best_pos)) {
                best = &q;
                best_pos = pos;
            }
        }
    }
    if (!best) return std::nullopt;
    return std::string(best->name);
}

const std::vector<std::string> & preference_order() {
    static const std::vector<std::string> order = [] {
        std::vector<std::string> v;
        for (const auto & q : k_quants) v.emplace_back(q.name);
        return v;
    }();
    return order;
}

double bits_per_weight(std::string_view name) {
    if (const auto * q = find(name)) return q->bpw;
    return 16.0;
}

}  // namespace rc::quant
