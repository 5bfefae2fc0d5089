// Stall-free scheduling (the scheduling issue): the per-step prefill budget comes from a step cost
// model calibrated when the engine starts, so the very first long prompt on a fresh engine is cut
// into chunks and the streams already decoding keep getting tokens while it is prefilled.
#include <thread>

#include "engine_fixture.h"

using namespace rc;
using namespace rc::test;

namespace {

// Collects a channel's events on a thread, stamping each token's arrival.
struct stamped_collector {
    std::vector<std::chrono::steady_clock::time_point> tokens;
    engine::generation_event done;
    std::thread thread;
    explicit stamped_collector(std::shared_ptr<engine::request_channel> ch) {
        thread = std::thread([this, ch] {
            for (;;) {
                auto ev = ch->pop(std::chrono::seconds(120));
                if (!ev) return;
                if (ev->kind != engine::generation_event::type::text) {
                    done = std::move(*ev);
                    return;
                }
                for (size_t i = 0; i < ev->tokens.size(); ++i) tokens.push_back(std::chrono::steady_clock::now());
            }
        });
    }
    void join() { thread.join(); }
};

std::vector<llama_token> long_prompt(const llama::model & m, int words) {
    std::string text;
    for (int i = 0; i < words; ++i) text += "word" + std::to_string(i) + " and ";
    return m.tokenize(text, true, false);
}

}  // namespace

TEST(step_budget, a_fresh_engine_knows_its_step_cost_before_the_first_request) {
    auto e = start_engine("tiny-chat");
    ASSERT_TRUE(e);
    auto st = e->stats();
    EXPECT_GT(st.step_per_token_ms, 0.0) << "calibrated at start";
    EXPECT_GE(st.step_fixed_ms, 0.0);
    EXPECT_GT(st.prefill_budget, 0);
}

TEST(step_budget, the_first_long_prompt_on_a_fresh_engine_is_chunked_while_a_stream_keeps_decoding) {
    // Size the bound so that about 48 tokens fit a step on this machine, whatever its speed.
    double fixed = 0, per_token = 0;
    {
        auto probe = start_engine("tiny-chat");
        ASSERT_TRUE(probe);
        fixed = probe->stats().step_fixed_ms;
        per_token = probe->stats().step_per_token_ms;
    }
    engine::engine_options o;
    o.n_ctx = 4096;
    o.max_step_ms = fixed + 48 * per_token;
    auto e = start_engine("tiny-chat", o);
    ASSERT_TRUE(e);
    auto lp = long_prompt(e->model(), 120);
    ASSERT_GT(lp.size(), 300u);
    const int budget = e->stats().prefill_budget;
    ASSERT_GT(budget, 0);
    ASSERT_LT(budget, static_cast<int>(lp.size()) / 2) << "the bound must cut this prompt (calibration drifted far)";

    auto stream = submit_ok(*e, greedy(e->model(), "A short question", 400));
    auto first = stream->pop(std::chrono::seconds(60));  // the stream is decoding before the long prompt arrives
    ASSERT_TRUE(first.has_value());
    stamped_collector bg(stream);
    const uint64_t chunks_before = e->stats().prefill_chunks;
    engine::generation_request lr;
    lr.prompt = lp;
    lr.sampling.temperature = 0;
    lr.max_tokens = 2;
    const auto submitted = std::chrono::steady_clock::now();
    stamped_collector longr(submit_ok(*e, lr));
    longr.join();
    bg.join();
    ASSERT_EQ(longr.done.kind, engine::generation_event::type::done) << longr.done.error.message;
    ASSERT_EQ(bg.done.kind, engine::generation_event::type::done) << bg.done.error.message;
    ASSERT_FALSE(longr.tokens.empty());
    const uint64_t chunks = e->stats().prefill_chunks - chunks_before;
    EXPECT_GE(chunks, 2u) << "the long prompt was cut into chunks (budget " << budget << " of " << lp.size() << " tokens)";
    int during = 0;
    for (auto t : bg.tokens) during += t > submitted && t < longr.tokens.front() ? 1 : 0;
    EXPECT_GE(during, static_cast<int>(chunks) - 2) << "the stream got a token in (about) every step that prefilled a chunk";
    EXPECT_GT(e->stats().step_tokens.count, 0u);
}
