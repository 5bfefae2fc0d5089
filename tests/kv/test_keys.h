#pragma once
// A block key that is distinct per `n` (and per `tag`), for tests that need keys, not real chains.
#include <cstdint>

#include "kv/block_key.h"

namespace rc::kv::test {

inline block_key key(uint8_t n, uint8_t tag = 0xab) {
    block_key k;
    k.d[0] = n;
    k.d[31] = tag;
    return k;
}

}  // namespace rc::kv::test
