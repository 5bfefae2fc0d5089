#include "engine/scheduler.h"

#include <gtest/gtest.h>

using namespace rc::engine;

TEST(scheduler, every_decoding_sequence_gets_one_token) {
    auto plan = plan_step({{true, 0}, {true, 0}, {true, 0}}, {16, 8});
    ASSERT_EQ(plan.size(), 3u);
    for (const auto & e : plan) EXPECT_EQ(e.n_tokens, 1);
}

TEST(scheduler, lone_prefill_uses_the_whole_batch) {
    auto plan = plan_step({{false, 5000}}, {2048, 512});
    ASSERT_EQ(plan.size(), 1u);
    EXPECT_EQ(plan[0].n_tokens, 2048);
}

TEST(scheduler, prefill_is_chunked_while_others_decode) {
    auto plan = plan_step({{true, 0}, {false, 5000}, {true, 0}}, {2048, 512});
    ASSERT_EQ(plan.size(), 3u);
    EXPECT_EQ(plan[0].index, 0);
    EXPECT_EQ(plan[1].index, 2);
    EXPECT_EQ(plan[2].index, 1);
    EXPECT_EQ(plan[2].n_tokens, 512);
}

TEST(scheduler, several_prefills_share_the_budget_in_admission_order) {
    auto plan = plan_step({{false, 300}, {false, 300}, {false, 300}}, {512, 256});
    int total = 0;
    for (const auto & e : plan) total += e.n_tokens;
    EXPECT_LE(total, 512);
    ASSERT_GE(plan.size(), 2u);
    EXPECT_EQ(plan[0].index, 0);
    EXPECT_EQ(plan[0].n_tokens, 300);  // first one alone may take all it needs
    EXPECT_EQ(plan[1].n_tokens, 212);  // the rest of the batch
}

TEST(scheduler, decode_never_starves_when_batch_is_small) {
    auto plan = plan_step({{true, 0}, {true, 0}, {false, 100}}, {2, 512});
    ASSERT_EQ(plan.size(), 2u);
    EXPECT_EQ(plan[0].n_tokens + plan[1].n_tokens, 2);
}

TEST(scheduler, the_prefill_budget_caps_each_prompt_so_short_ones_start_together) {
    auto plan = plan_step({{true, 0}, {false, 300}, {false, 20}, {false, 20}}, {2048, 32});
    ASSERT_EQ(plan.size(), 4u);
    EXPECT_EQ(plan[1].n_tokens, 32);  // the long prompt is chunked
    EXPECT_EQ(plan[2].n_tokens, 20);  // short prompts go whole
    EXPECT_EQ(plan[3].n_tokens, 20);
}

TEST(scheduler, prefill_budget_follows_the_measured_rate) {
    prefill_rate rate;
    EXPECT_EQ(prefill_budget_for(rate, 250, 512), 512);  // unmeasured: the cap
    rate.observe(4, 1, 0.1);                             // too few prompt tokens to judge
    EXPECT_EQ(rate.tokens_per_second(), 0);
    rate.observe(512, 0, 8.0);                           // 64 tokens/s, like a 1B model on 2 cores
    EXPECT_DOUBLE_EQ(rate.tokens_per_second(), 64);
    EXPECT_EQ(prefill_budget_for(rate, 250, 512), 16);   // 250 ms fit 16 tokens
    EXPECT_EQ(prefill_budget_for(rate, 1000, 512), 64);
    EXPECT_EQ(prefill_budget_for(rate, 10, 512), 16);    // never below the floor
    EXPECT_EQ(prefill_budget_for(rate, 0, 512), 512);    // bound off
    rate.observe(4096, 4, 0.5);                          // a GPU-like step moves the average up
    EXPECT_GT(rate.tokens_per_second(), 64 * 10);
    EXPECT_EQ(prefill_budget_for(rate, 250, 512), 512);  // fast prefill: the cap decides
}
