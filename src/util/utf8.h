#pragma once
// UTF-8 helpers for streaming text that arrives token by token (a token may end mid code point).
#include <cstddef>
#include <string_view>

namespace rc::utf8 {

// Length of the longest prefix of `s` that ends on a code point boundary (an incomplete trailing
// sequence is excluded; invalid bytes count as complete so they never block the stream).
size_t complete_prefix_length(std::string_view s);

// True when `s` is entirely valid UTF-8 (no overlongs, no surrogates, <= U+10FFFF).
bool is_valid(std::string_view s);

}  // namespace rc::utf8
