// Sliding-window and hybrid memories in blocks + states (kv::block_state_planner): the full-attention
// layers' KV in blocks, the window or recurrent state beside them at checkpoints. On the generated
// Gemma 3 (iSWA) and Qwen3.5 (hybrid) families in F32: a second conversation resumes from the
// state at the shared system prompt's end with the first one's blocks, a conversation from the end of
// its reply, and each decodes what a recomputing engine decodes. (What is stored, and only once:
// tests/kv/kv_planner_test.cpp; the bytes it saves: bench/checkpoints.mjs.)
#include "engine_fixture.h"

using namespace rc;
using namespace rc::test;

namespace {

class kv_block_states : public ::testing::TestWithParam<const char *> {
  protected:
    std::unique_ptr<engine::engine> start(size_t host_budget) {
        engine::engine_options o;
        o.n_ctx = 1024;
        o.n_parallel = 1;
        o.kv.block_size = 16;
        o.kv.host_budget = host_budget;
        return start_engine(GetParam(), o);
    }
    static run_result run(engine::engine & e, const std::vector<llama_token> & prompt, std::vector<int> boundaries = {}) {
        engine::generation_request r;
        r.prompt = prompt;
        r.sampling.temperature = 0;
        r.max_tokens = 8;
        r.message_boundaries = std::move(boundaries);
        auto out = collect(*submit_ok(e, r));
        EXPECT_EQ(out.done.kind, engine::generation_event::type::done) << out.done.error.message;
        return out;
    }
};

const char * k_system =
    "You answer questions about the lab's cluster: which racks hold which cards, how the agents are upgraded, where the "
    "logs go, and who to ask when a host stays down after a restart. Be brief and name the host.";

}  // namespace

TEST_P(kv_block_states, a_second_conversation_resumes_at_the_shared_system_prompt_from_the_first_ones_blocks) {
    auto e = start(64u << 20);
    ASSERT_TRUE(e);
    const auto system = e->model().tokenize(k_system, true, false);
    const int boundary = static_cast<int>(system.size());
    ASSERT_GT(boundary, 32) << "two blocks and a partial one";
    auto with = [&](const char * question) {
        auto t = system;
        auto q = e->model().tokenize(question, false, false);
        t.insert(t.end(), q.begin(), q.end());
        return t;
    };
    const auto first = with(" Which rack holds the old cards?");
    const auto second = with(" How do I restart the agent on host seven?");

    run(*e, first, {boundary});
    auto r = run(*e, second, {boundary});
    EXPECT_EQ(r.done.usage.cached_tokens, boundary) << "the state at the system prompt's end and the blocks before it";
    EXPECT_GT(e->kv_stats().prompt_tokens.host, 0u);

    auto fresh = start(0);
    ASSERT_TRUE(fresh);
    EXPECT_EQ(run(*fresh, second).tokens, r.tokens) << "resumed from blocks and a state: the output of recomputing";
}

TEST_P(kv_block_states, a_conversation_continues_from_its_reply_across_a_block_boundary) {
    auto e = start(64u << 20);
    ASSERT_TRUE(e);
    auto prompt = e->model().tokenize(k_system, true, false);
    auto turn1 = run(*e, prompt);
    auto turn2 = prompt;
    turn2.insert(turn2.end(), turn1.tokens.begin(), turn1.tokens.end());
    auto more = e->model().tokenize(" And which host logs the most?", false, false);
    turn2.insert(turn2.end(), more.begin(), more.end());
    auto r = run(*e, turn2);
    // The reply's last token never reached the context: the state after the rest of it is resumed.
    EXPECT_EQ(r.done.usage.cached_tokens, static_cast<int>(prompt.size() + turn1.tokens.size()) - 1);

    auto fresh = start(0);
    ASSERT_TRUE(fresh);
    EXPECT_EQ(run(*fresh, turn2).tokens, r.tokens);
}

std::string family_name(const ::testing::TestParamInfo<const char *> & p) { return std::string(p.param).substr(5, 6); }  // gemma3, qwen35

INSTANTIATE_TEST_SUITE_P(layouts, kv_block_states, ::testing::Values("tiny-gemma3-f32", "tiny-qwen35-f32"), family_name);
