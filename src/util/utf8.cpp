#include "util/utf8.h"

#include <cstdint>

namespace rc::utf8 {

namespace {
int sequence_length(uint8_t lead) {
    if (lead < 0x80) return 1;
    if ((lead & 0xE0) == 0xC0) return 2;
    if ((lead & 0xF0) == 0xE0) return 3;
    if ((lead & 0xF8) == 0xF0) return 4;
    return 0;  // continuation byte or invalid lead
}
}  // namespace

size_t complete_prefix_length(std::string_view s) {
    // Only the last 3 bytes can start an incomplete sequence.
    size_t n = s.size();
    for (size_t back = 1; back <= 4 && back <= n; ++back) {
        auto c = static_cast<uint8_t>(s[n - back]);
        if ((c & 0xC0) == 0x80) continue;  // continuation: keep looking for the lead byte
        int len = sequence_length(c);
        if (len == 0) return n;                       // invalid lead: nothing to wait for
        return static_cast<size_t>(len) > back ? n - back : n;
    }
    return n;
}

bool is_valid(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
        auto c = static_cast<uint8_t>(s[i]);
        int len = sequence_length(c);
        if (len == 0 || i + len > s.size()) return false;
        uint32_t cp = len == 1 ? c : c & (0x7F >> len);
        for (int k = 1; k < len; ++k) {
            auto cc = static_cast<uint8_t>(s[i + k]);
            if ((cc & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (cc & 0x3F);
        }
        static constexpr uint32_t min_for_len[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min_for_len[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += len;
    }
    return true;
}

}  // namespace rc::utf8
