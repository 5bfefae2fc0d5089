#pragma once
// SHA-256 (OpenSSL) for content addressing: KV block keys, model fingerprints, blob digests.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace rc {

using digest256 = std::array<uint8_t, 32>;

std::string to_hex(const digest256 & d);
// 64 hex digits (either case) → the digest; false, leaving `out` unspecified, for anything else.
bool from_hex(std::string_view hex, digest256 & out);

// Incremental hashing; feed() any number of times, then finish() once.
class sha256 {
  public:
    sha256();
    ~sha256();
    sha256(const sha256 &) = delete;
    sha256 & operator=(const sha256 &) = delete;

    sha256 & feed(const void * data, size_t n);
    sha256 & feed(std::string_view s) { return feed(s.data(), s.size()); }
    template <typename T>
    sha256 & feed_value(const T & v) {
        static_assert(std::is_trivially_copyable_v<T>);
        return feed(&v, sizeof v);
    }
    digest256 finish();

  private:
    struct state;
    std::unique_ptr<state> s_;
};

digest256 sha256_of(std::string_view data);

}  // namespace rc
