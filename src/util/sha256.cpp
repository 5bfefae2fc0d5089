#include "util/sha256.h"

#include <openssl/evp.h>

#include <stdexcept>

namespace rc {

struct sha256::state {
    EVP_MD_CTX * ctx = nullptr;
};

sha256::sha256() : s_(std::make_unique<state>()) {
    s_->ctx = EVP_MD_CTX_new();
    if (!s_->ctx || EVP_DigestInit_ex(s_->ctx, EVP_sha256(), nullptr) != 1) throw std::runtime_error("OpenSSL SHA-256 init failed");
}

sha256::~sha256() { EVP_MD_CTX_free(s_->ctx); }

sha256 & sha256::feed(const void * data, size_t n) {
    EVP_DigestUpdate(s_->ctx, data, n);
    return *this;
}

digest256 sha256::finish() {
    digest256 out{};
    unsigned int len = 0;
    EVP_DigestFinal_ex(s_->ctx, out.data(), &len);
    return out;
}

digest256 sha256_of(std::string_view data) { return sha256().feed(data).finish(); }

std::string to_hex(const digest256 & d) {
    static const char * hex = "0123456789abcdef";
    std::string s(64, '0');
    for (size_t i = 0; i < d.size(); ++i) {
        s[2 * i] = hex[d[i] >> 4];
        s[2 * i + 1] = hex[d[i] & 15];
    }
    return s;
}

bool from_hex(std::string_view hex, digest256 & out) {
    if (hex.size() != 2 * out.size()) return false;
    auto nibble = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    for (size_t i = 0; i < out.size(); ++i) {
        const int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return false;
        out[i] = static_cast<uint8_t>(hi << 4 | lo);
    }
    return true;
}

}  // namespace rc
