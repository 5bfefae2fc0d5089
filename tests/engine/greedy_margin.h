#pragma once
// When may a test demand token-identical greedy output from two runs whose KV cells lie differently in
// the pool (a prefix shared from another sequence, blocks restored into holes, a preempted sequence
// swapped back in)? llama.cpp's attention sums over the cells in pool order, so a different layout
// changes the result by about one ULP (kv_numerics_test measures it). On tiny-chat-q8 that ULP is
// amplified to tenths of a logit (Q8_0 rounds every activation to 8 bits), which flips greedy
// near-ties; on tiny-chat-f32 (F32 weights, F32 KV cache, flash attention off) it stays below
// `k_layout_logit_bound`. So layout-sensitive tests run on tiny-chat-f32 and first check that the
// reference run has no near-tie: every greedy choice must beat the runner-up by `k_min_greedy_margin`,
// ten times the bound. A test that passes that check cannot flip a token through numerics alone, so
// any difference it finds is a KV bookkeeping error.
#include <gtest/gtest.h>

#include "engine_fixture.h"
#include "support/exact_kernels.h"

namespace rc::test {

inline constexpr const char * k_layout_model = "tiny-chat-f32";
inline constexpr float k_layout_logit_bound = 1e-4f;  // asserted by kv_numerics_test
inline constexpr float k_min_greedy_margin = 1e-3f;

// A reference request must ask for logprobs_top >= 2. Fails the test when a greedy choice is a near-tie.
// Not where outputs are not compared (support/exact_kernels.h).
inline void expect_clear_greedy_margins(const run_result & r, const std::string & what) {
    if (!exact_kernels()) return;
    for (size_t i = 0; i < r.choices.size(); ++i) {
        const auto & top = r.choices[i].top;
        ASSERT_GE(top.size(), 2u) << what << ": the reference must request logprobs_top >= 2";
        ASSERT_GE(top[0].logprob - top[1].logprob, k_min_greedy_margin)
            << what << ": token " << i << " is a numerical near-tie; the comparison would test rounding, not KV";
    }
}

}  // namespace rc::test
