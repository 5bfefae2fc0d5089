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

TEST(scheduler, decodes_and_one_prefill_chunk_share_a_step) {
    auto plan = plan_step({{true, 0}, {false, 5000}, {true, 0}}, {2048, 500, 16});
    ASSERT_EQ(plan.size(), 3u);
    EXPECT_EQ(plan[0].index, 0);
    EXPECT_EQ(plan[1].index, 2);
    EXPECT_EQ(plan[2].index, 1);
    EXPECT_EQ(plan[2].n_tokens, 496) << "cut at a multiple of the alignment";
}

TEST(scheduler, the_chunk_budget_is_shared_by_prompts_in_admission_order_and_ends_at_a_cut) {
    auto plan = plan_step({{true, 0}, {false, 20}, {false, 20}, {false, 300}, {false, 20}}, {2048, 96, 16});
    ASSERT_EQ(plan.size(), 4u);
    EXPECT_EQ(plan[1].n_tokens, 20) << "short prompts go whole";
    EXPECT_EQ(plan[2].n_tokens, 20);
    EXPECT_EQ(plan[3].index, 3);
    EXPECT_EQ(plan[3].n_tokens, 48) << "56 left, cut to 48; the last prompt waits";
    int prefill = 0;
    for (const auto & e : plan) prefill += e.index == 0 ? 0 : e.n_tokens;
    EXPECT_LE(prefill, 96);
}

TEST(scheduler, with_nothing_decoding_prompts_start_together) {
    auto plan = plan_step({{false, 300}, {false, 300}, {false, 300}}, {512, 64});
    ASSERT_EQ(plan.size(), 2u);
    EXPECT_EQ(plan[0].n_tokens, 300) << "no stream waits: the budget does not apply";
    EXPECT_EQ(plan[1].n_tokens, 208) << "the rest of the batch, cut at the alignment";
}

TEST(scheduler, decode_never_starves_when_the_step_is_small) {
    auto plan = plan_step({{true, 0}, {true, 0}, {false, 100}}, {2, 512});
    ASSERT_EQ(plan.size(), 2u);
    EXPECT_EQ(plan[0].n_tokens + plan[1].n_tokens, 2);
}

TEST(scheduler, a_step_fits_the_free_cells) {
    auto plan = plan_step({{true, 0}, {false, 100}}, {21, 512, 16});
    ASSERT_EQ(plan.size(), 2u);
    EXPECT_EQ(plan[1].n_tokens, 16) << "20 cells left for prefill, cut to 16";
}

TEST(step_cost_model, calibration_gives_fixed_and_per_token_costs) {
    step_cost_model m;
    EXPECT_FALSE(m.calibrated());
    m.calibrate(90.0, 90.0 + 31 * 13.0, 32);  // a 1B model on 2 CPU cores: 90 ms per step, 13 ms per token
    ASSERT_TRUE(m.calibrated());
    EXPECT_NEAR(m.per_token_ms(), 13.0, 1e-9);
    EXPECT_NEAR(m.fixed_ms(), 77.0, 1e-9);
    EXPECT_NEAR(m.predict_ms(100), 77.0 + 1300.0, 1e-9);
    EXPECT_EQ(m.tokens_within(750), 51);
    EXPECT_EQ(m.tokens_within(50), 0);
}

TEST(step_cost_model, observations_follow_a_change_and_one_outlier_moves_them_a_fifth) {
    step_cost_model m;
    m.calibrate(10, 10 + 31 * 1.0, 32);
    for (int i = 0; i < 30; ++i) m.observe(128, m.fixed_ms() + 128 * 2.0);  // the steps got slower per token
    EXPECT_NEAR(m.per_token_ms(), 2.0, 0.05);
    const double before = m.fixed_ms();
    m.observe(2, 500);  // one slow decode step
    EXPECT_LE(m.fixed_ms(), 0.8 * before + 0.2 * 500 + 1e-9);
}

TEST(step_cost_model, the_prefill_budget_keeps_a_step_within_the_bound_from_the_first_request) {
    step_cost_model m;
    EXPECT_EQ(prefill_budget_for(m, 750, 3, 512, 16), 16) << "nothing known yet: one aligned chunk, whose step teaches the cost";
    EXPECT_EQ(prefill_budget_for(m, 0, 3, 512, 16), 512) << "bound off: the cap";
    m.calibrate(90.0, 90.0 + 31 * 13.0, 32);
    const int b = prefill_budget_for(m, 750, 3, 512, 16);
    EXPECT_EQ(b, 48);
    EXPECT_LE(m.predict_ms(b + 3), 750.0);
    EXPECT_EQ(prefill_budget_for(m, 10, 3, 512, 16), 16) << "never below one aligned chunk";
    EXPECT_EQ(prefill_budget_for(m, 0, 3, 512, 16), 512) << "bound off";
    step_cost_model gpu;
    gpu.calibrate(8.0, 8.5, 32);
    EXPECT_EQ(prefill_budget_for(gpu, 750, 3, 512, 64), 512) << "fast prefill: the cap decides";
}

TEST(step_cost_model, a_model_never_calibrated_learns_from_the_first_steps) {
    step_cost_model m;
    m.observe(2, 90.0);  // decode-only steps: the fixed cost
    m.observe(1, 90.0);
    EXPECT_FALSE(m.calibrated()) << "no step of several tokens yet";
    EXPECT_NEAR(m.fixed_ms(), 90.0, 1e-9);
    m.observe(16 + 2, 90.0 + 18 * 13.0);  // one aligned chunk beside two decodes
    ASSERT_TRUE(m.calibrated());
    EXPECT_NEAR(m.per_token_ms(), 13.0, 1e-9);
    EXPECT_EQ(prefill_budget_for(m, 750, 2, 512, 16), 48);
    EXPECT_FALSE(m.settled()) << "two decode-only steps are not enough to store";
    for (int i = 0; i < 4; ++i) {
        m.observe(1, 90.0);
        m.observe(48 + 2, 90.0 + 50 * 13.0);
    }
    EXPECT_TRUE(m.settled());
}

TEST(step_cost_model, a_lone_prefill_first_over_estimates_the_token_cost) {
    step_cost_model m;
    m.observe(512, 90.0 + 512 * 13.0);  // nothing decoding yet: the whole step is taken as per-token cost
    ASSERT_TRUE(m.calibrated());
    EXPECT_GE(m.per_token_ms(), 13.0);
    EXPECT_LE(m.per_token_ms(), 13.0 + 90.0 / 512 + 1e-9);
}

// Round three: a remembered fixed = per_token = 599999 ms (valid JSON, absurd numbers) kept every
// chunk one token, so no step was ever large enough to correct per_token, and it stayed for good.
TEST(step_cost_model, an_absurd_remembered_token_cost_is_forgotten_and_learned_again) {
    step_cost_model m;
    m.set(599999.0, 599999.0);
    EXPECT_EQ(prefill_budget_for(m, 750, 1, 512, 16), 16) << "the smallest chunk: no large step can come";
    m.observe(1, 20.0);  // what decode steps really take
    m.observe(2, 22.0);
    EXPECT_TRUE(m.calibrated());
    m.observe(1 + 16, 20.0 + 16 * 2.0);  // one aligned chunk beside a decode: 17 tokens, too few to correct it...
    m.observe(1, 20.0);
    m.observe(1, 20.0);
    m.observe(1, 20.0);
    EXPECT_FALSE(m.calibrated()) << "three small steps that per_token alone overshoots 10x: forgotten";
    EXPECT_NEAR(m.fixed_ms(), 20.0, 1e-9) << "learned again from the step that ended it";
    m.observe(16 + 1, 20.0 + 16 * 2.0);
    ASSERT_TRUE(m.calibrated());
    EXPECT_NEAR(m.per_token_ms(), 2.0, 0.2);
    EXPECT_GT(prefill_budget_for(m, 750, 1, 512, 16), 256) << "chunks grow again";
}

TEST(step_cost_model, a_stale_remembered_model_is_replaced_after_three_surprises) {
    step_cost_model m;
    m.set(90.0, 13.0 * 50);  // remembered from a much slower machine
    m.observe(64, 90.0 + 64 * 13.0);
    m.observe(64, 90.0 + 64 * 13.0);
    EXPECT_GT(m.per_token_ms(), 13.0 * 10) << "two surprises are averaged in";
    EXPECT_FALSE(m.consistent()) << "not worth storing while steps contradict it";
    m.observe(64, 90.0 + 64 * 13.0);
    EXPECT_NEAR(m.per_token_ms(), 13.0, 1e-9) << "the third replaces it";
    m.observe(64, 90.0 + 64 * 13.0);
    EXPECT_TRUE(m.consistent()) << "a step that agrees ends the streak";
    m.set(9000.0, 13.0);  // a fixed cost far too high
    for (int i = 0; i < 3; ++i) m.observe(1, 90.0 + 13.0);
    EXPECT_NEAR(m.fixed_ms(), 90.0, 1e-9);
}
