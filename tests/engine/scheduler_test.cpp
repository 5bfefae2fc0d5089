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
