#pragma once
// Whether this build's kernels give bit-identical logits for the same tokens whatever the batch
// composition and the layout of the KV cells (llama.cpp's CPU kernels do: kv_numerics_test). The
// tests that resume, restore or share a prefix then demand token-identical greedy output.
// make test-vulkan sets RUSTYCAGE_TEST_INEXACT_KERNELS=1: Vulkan's shaders round a one-token step
// and a batch differently, and on a random-weight model that flips greedy near-ties. There those
// tests check everything else (what was reused, from which tier, that it was served) and
// kv_bridge_test checks that the KV bytes come back from the device unchanged.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

namespace rc::test {

inline bool exact_kernels() {
    const char * v = std::getenv("RUSTYCAGE_TEST_INEXACT_KERNELS");
    return !v || !*v || std::strcmp(v, "0") == 0;
}

}  // namespace rc::test

// EXPECT_EQ of two outputs that only bit-identical kernels make equal (see above).
#define EXPECT_SAME_OUTPUT(a, b) \
    if (!::rc::test::exact_kernels()) { \
    } else \
        EXPECT_EQ(a, b)
