#pragma once
// A blob's content address: "sha256-<64 lowercase hex>", the spelling used for file names under
// blobs/ and in manifests. Ollama's API spells it "sha256:<hex>"; parse() accepts both. Only a
// parsed (or computed) digest can name a blob, so a digest can never carry a path.
#include <compare>
#include <string>
#include <string_view>

#include "util/result.h"
#include "util/sha256.h"

namespace rc::store {

class blob_digest {
  public:
    blob_digest() = default;  // empty: names no blob; blob_store and manifests refuse it

    // Errors: invalid_argument naming the problem (prefix, length, upper-case or non-hex digits).
    static result<blob_digest> parse(std::string_view text);
    static blob_digest of(const digest256 & d);

    const std::string & str() const { return s_; }  // "sha256-<hex>"
    std::string_view hex() const { return s_.empty() ? std::string_view() : std::string_view(s_).substr(7); }
    std::string api() const;                         // "sha256:<hex>"
    bool empty() const { return s_.empty(); }

    auto operator<=>(const blob_digest &) const = default;

  private:
    explicit blob_digest(std::string s) : s_(std::move(s)) {}
    std::string s_;
};

}  // namespace rc::store
