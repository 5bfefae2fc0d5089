#include "store/digest.h"

namespace rc::store {

result<blob_digest> blob_digest::parse(std::string_view text) {
    auto bad = [&](const std::string & why) {
        std::string shown(text.substr(0, 80));
        for (char & c : shown) {
            if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
        }
        return make_error(errc::invalid_argument, "invalid digest '" + shown + "': " + why);
    };
    if (!text.starts_with("sha256-") && !text.starts_with("sha256:")) return bad("expected sha256-<hex> or sha256:<hex>");
    std::string_view hex = text.substr(7);
    if (hex.size() != 64) return bad("expected 64 hex digits, got " + std::to_string(hex.size()));
    for (size_t i = 0; i < hex.size(); ++i) {
        char c = hex[i];
        if (c >= 'A' && c <= 'F') return bad("hex digits must be lower-case");
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return bad("not a hex digit at position " + std::to_string(i));
    }
    return blob_digest("sha256-" + std::string(hex));
}

blob_digest blob_digest::of(const digest256 & d) { return blob_digest("sha256-" + to_hex(d)); }

std::string blob_digest::api() const { return s_.empty() ? std::string() : "sha256:" + std::string(hex()); }

}  // namespace rc::store
