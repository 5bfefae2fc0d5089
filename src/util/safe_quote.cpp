#include "util/safe_quote.h"

namespace rc {

std::string safe_quote(std::string_view text, size_t max_bytes) {
    static constexpr char hex[] = "0123456789abcdef";
    std::string out = "'";
    for (size_t i = 0; i < text.size() && i < max_bytes; ++i) {
        auto c = static_cast<unsigned char>(text[i]);
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            out += static_cast<char>(c);
        } else {
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    if (text.size() > max_bytes) out += "...";
    return out + "'";
}

}  // namespace rc
