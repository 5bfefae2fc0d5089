// Engine behaviour on the generated tiny-chat model: batching equivalence, limits, stops,
// cancellation, chunked prefill, logprobs, seeds and context overflow.
#include <nlohmann/json.hpp>
#include <sys/resource.h>

#include <cerrno>

#include "engine/chat_format.h"
#include "engine_fixture.h"
#include "support/backend_threads.h"
#include "support/exact_kernels.h"
#include "support/threads.h"

using namespace rc;
using namespace rc::test;

namespace {
const std::vector<std::string> prompts = {
    "The quick brown fox", "Once upon a time in a land far away", "def fibonacci(n):", "Bonjour, comment allez-vous",
    "1, 2, 3, 4,", "The capital of France is", "SELECT * FROM users WHERE", "In the beginning there was",
};
}

// Bit-identical greedy output needs kernels whose numerics do not depend on the batch shape; in
// llama.cpp's CPU backend that holds for Q8_0 weights (integer dot products) with an F32 KV cache and
// flash attention off; F16 weights take different precision paths for one token than for many.
TEST(engine, greedy_output_alone_equals_output_among_eight_concurrent) {
    engine::engine_options opts;
    opts.n_parallel = 8;
    opts.n_ctx = 2048;
    opts.kv_type = GGML_TYPE_F32;
    auto e = start_engine("tiny-chat-q8", opts);
    ASSERT_TRUE(e);
    std::vector<std::vector<llama_token>> alone;
    for (const auto & p : prompts) {
        auto r = collect(*submit_ok(*e, greedy(e->model(), p, 24)));
        ASSERT_EQ(r.done.kind, engine::generation_event::type::done) << r.done.error.message;
        ASSERT_EQ(r.tokens.size(), 24u) << "greedy output should not hit end-of-generation this early";
        alone.push_back(r.tokens);
    }
    std::vector<std::shared_ptr<engine::request_channel>> chans;
    for (const auto & p : prompts) chans.push_back(submit_ok(*e, greedy(e->model(), p, 24)));
    for (size_t i = 0; i < chans.size(); ++i) {
        auto r = collect(*chans[i]);
        EXPECT_SAME_OUTPUT(r.tokens, alone[i]) << "prompt " << i << " diverged when batched";
    }
    EXPECT_TRUE(poll_until([&] { return e->stats().running == 0; }));
    EXPECT_EQ(e->stats().kv_cells_used, 0);
}

// On the F16 model batching may only flip numerical near-ties: until the first differing token the
// log-probabilities agree to within the precision noise, and a differing token was a near-tie.
// Cross-talk between sequences would move them by far more.
TEST(engine, f16_batched_output_tracks_alone_within_precision) {
    engine::engine_options opts;
    opts.n_parallel = 8;
    opts.n_ctx = 2048;
    auto e = start_engine("tiny-chat", opts);
    ASSERT_TRUE(e);
    auto request = [&](const std::string & p) {
        auto r = greedy(e->model(), p, 24);
        r.logprobs_top = 2;
        return r;
    };
    std::vector<run_result> alone;
    for (const auto & p : prompts) alone.push_back(collect(*submit_ok(*e, request(p))));
    std::vector<std::shared_ptr<engine::request_channel>> chans;
    for (const auto & p : prompts) chans.push_back(submit_ok(*e, request(p)));
    const float tolerance = 0.15f;
    for (size_t i = 0; i < chans.size(); ++i) {
        auto b = collect(*chans[i]);
        ASSERT_EQ(b.choices.size(), alone[i].choices.size());
        for (size_t k = 0; k < b.choices.size(); ++k) {
            const auto & a = alone[i].choices[k];
            if (b.tokens[k] != alone[i].tokens[k]) {
                EXPECT_LT(a.top[0].logprob - a.top[1].logprob, tolerance) << "prompt " << i << " token " << k << " flipped a clear decision";
                break;
            }
            EXPECT_NEAR(b.choices[k].chosen.logprob, a.chosen.logprob, tolerance) << "prompt " << i << " token " << k;
        }
    }
}

TEST(engine, max_tokens_holds) {
    auto e = start_engine("tiny-chat");
    ASSERT_TRUE(e);
    auto r = collect(*submit_ok(*e, greedy(e->model(), "Count with me:", 7)));
    EXPECT_EQ(r.done.finish, engine::finish_reason::length);
    EXPECT_EQ(r.done.usage.completion_tokens, 7);
    EXPECT_EQ(r.tokens.size(), 7u);
}

TEST(engine, stop_string_ends_output_before_it) {
    auto e = start_engine("tiny-chat");
    ASSERT_TRUE(e);
    auto full = collect(*submit_ok(*e, greedy(e->model(), "The quick brown fox", 32)));
    ASSERT_GT(full.text.size(), 20u);
    // A stop string that starts in the middle of the greedy text and spans token boundaries.
    std::string stop = full.text.substr(full.text.size() / 2, 4);
    size_t expected_cut = full.text.find(stop);
    auto req = greedy(e->model(), "The quick brown fox", 32);
    req.stop = {stop};
    auto r = collect(*submit_ok(*e, req));
    EXPECT_EQ(r.done.finish, engine::finish_reason::stop);
    EXPECT_EQ(r.done.stop_word, stop);
    EXPECT_EQ(r.text, full.text.substr(0, expected_cut));
    EXPECT_EQ(r.text.find(stop), std::string::npos);
}

TEST(engine, cancelled_sequence_frees_its_cells) {
    engine::engine_options opts;
    opts.n_ctx = 4096;
    auto e = start_engine("tiny-chat", opts);
    ASSERT_TRUE(e);
    auto ch = submit_ok(*e, greedy(e->model(), "Tell me a very long story", 3000));
    auto first = ch->pop(std::chrono::seconds(60));
    ASSERT_TRUE(first.has_value());
    EXPECT_TRUE(poll_until([&] { return e->stats().kv_cells_used > 0; }));
    ch->cancel();
    auto r = collect(*ch);
    EXPECT_EQ(r.done.finish, engine::finish_reason::cancelled);
    EXPECT_LT(r.done.usage.completion_tokens, 3000);
    EXPECT_TRUE(poll_until([&] { return e->stats().running == 0; }));
    EXPECT_EQ(e->stats().kv_cells_used, 0);
    EXPECT_EQ(e->stats().requests_cancelled, 1u);
    // The freed sequence id is reusable.
    EXPECT_EQ(collect(*submit_ok(*e, greedy(e->model(), "again", 3))).tokens.size(), 3u);
}

TEST(engine, long_prefill_is_chunked_between_decode_steps) {
    engine::engine_options opts;
    opts.n_ctx = 4096;
    opts.n_batch = 256;
    opts.prefill_chunk = 32;
    opts.kv_type = GGML_TYPE_F32;
    auto e = start_engine("tiny-chat-q8", opts);
    ASSERT_TRUE(e);
    auto alone = collect(*submit_ok(*e, greedy(e->model(), "Short prompt here", 10)));

    auto a = submit_ok(*e, greedy(e->model(), "Short prompt here", 10));
    auto first = a->pop(std::chrono::seconds(60));  // A is decoding before B arrives
    ASSERT_TRUE(first.has_value());
    std::string long_text;
    for (int i = 0; i < 250; ++i) long_text += "word" + std::to_string(i) + " and more ";
    auto b_req = greedy(e->model(), long_text, 2);
    ASSERT_GT(b_req.prompt.size(), 1000u);
    auto b = submit_ok(*e, b_req);

    // Poll both channels and record the order in which their events arrive.
    std::vector<llama_token> a_tokens = {first->tokens.at(0).chosen.token};
    bool a_done = false, b_started = false, a_done_before_b_started = false;
    while (!a_done || !b_started) {
        if (!a_done) {
            if (auto ev = a->pop(std::chrono::milliseconds(1))) {
                if (ev->kind == engine::generation_event::type::text) a_tokens.push_back(ev->tokens.at(0).chosen.token);
                else a_done = true, a_done_before_b_started = !b_started;
            }
        }
        if (!b_started) {
            if (auto ev = b->pop(std::chrono::milliseconds(1))) b_started = true;
        }
    }
    EXPECT_TRUE(a_done_before_b_started) << "A should finish its 10 tokens while B's 1000+ token prompt is still prefilling";
    EXPECT_EQ(a_tokens, alone.tokens) << "A's output must not change when a long prefill interleaves";
    auto rb = collect(*b);
    EXPECT_EQ(rb.done.kind, engine::generation_event::type::done);
}

TEST(engine, logprobs_report_the_chosen_token_and_ranked_alternatives) {
    auto e = start_engine("tiny-chat");
    ASSERT_TRUE(e);
    auto req = greedy(e->model(), "The capital of France is", 5);
    req.logprobs_top = 3;
    auto r = collect(*submit_ok(*e, req));
    ASSERT_EQ(r.choices.size(), 5u);
    for (const auto & c : r.choices) {
        ASSERT_EQ(c.top.size(), 3u);
        EXPECT_LE(c.chosen.logprob, 0.0f);
        EXPECT_EQ(c.top[0].token, c.chosen.token) << "greedy picks the most likely token";
        EXPECT_GE(c.top[0].logprob, c.top[1].logprob);
        EXPECT_GE(c.top[1].logprob, c.top[2].logprob);
        EXPECT_FALSE(c.chosen.text.empty());
    }
}

// Q8_0 + F32 KV: the second run reuses the cached prompt and decodes only its last token, which
// must give the very same logits as the full prefill (see the batching test above).
TEST(engine, same_seed_same_output_different_seed_different_output) {
    engine::engine_options opts;
    opts.kv_type = GGML_TYPE_F32;
    auto e = start_engine("tiny-chat-q8", opts);
    ASSERT_TRUE(e);
    auto sampled = [&](uint32_t seed) {
        auto req = greedy(e->model(), "Once upon a time", 24);
        req.sampling.temperature = 1.5f;
        req.sampling.top_k = 0;
        req.sampling.top_p = 1.0f;
        req.sampling.min_p = 0.0f;
        req.sampling.seed = seed;
        return collect(*submit_ok(*e, req)).tokens;
    };
    const auto once = sampled(1234);
    EXPECT_SAME_OUTPUT(sampled(1234), once);
    EXPECT_NE(sampled(1234), sampled(99));
}

TEST(engine, prompt_longer_than_context_is_a_clear_error_or_truncated_on_request) {
    engine::engine_options opts;
    opts.n_ctx = 256;
    auto e = start_engine("tiny-chat", opts);
    ASSERT_TRUE(e);
    std::string text;
    for (int i = 0; i < 200; ++i) text += "token" + std::to_string(i) + " ";
    auto req = greedy(e->model(), text, 4);
    ASSERT_GT(req.prompt.size(), 256u);
    auto ch = e->submit(req);
    ASSERT_FALSE(ch.ok());
    EXPECT_EQ(ch.err().code, errc::context_overflow);
    EXPECT_NE(ch.err().message.find("256"), std::string::npos) << ch.err().message;

    req.truncate_prompt = true;
    auto r = collect(*submit_ok(*e, req));
    EXPECT_EQ(r.done.kind, engine::generation_event::type::done);
    EXPECT_EQ(r.tokens.size(), 4u);
    EXPECT_LT(r.done.usage.prompt_tokens, 256);
}

TEST(engine, generation_stops_at_the_end_of_the_context) {
    engine::engine_options opts;
    opts.n_ctx = 64;  // llama.cpp rounds the cell count up (to 256)
    auto e = start_engine("tiny-chat", opts);
    ASSERT_TRUE(e);
    auto req = greedy(e->model(), "Hello", -1);
    req.sampling.ignore_eos = true;
    auto r = collect(*submit_ok(*e, req));
    EXPECT_EQ(r.done.finish, engine::finish_reason::length);
    EXPECT_EQ(r.done.usage.prompt_tokens + r.done.usage.completion_tokens, e->n_ctx());
}

TEST(engine, bad_requests_are_rejected_before_queueing) {
    auto e = start_engine("tiny-chat");
    ASSERT_TRUE(e);
    engine::generation_request empty;
    EXPECT_EQ(e->submit(empty).err().code, errc::invalid_argument);
    auto bad_token = greedy(e->model(), "x", 1);
    bad_token.prompt.push_back(10'000'000);
    EXPECT_EQ(e->submit(bad_token).err().code, errc::invalid_argument);
    auto bad_temp = greedy(e->model(), "x", 1);
    bad_temp.sampling.temperature = -1;
    EXPECT_EQ(e->submit(bad_temp).err().code, errc::invalid_argument);
    engine::generation_request embed = greedy(e->model(), "x", 1);
    embed.kind = engine::request_kind::embed;
    EXPECT_EQ(e->submit(embed).err().code, errc::invalid_argument);
    // A grammar that does not parse is refused by submit() itself: grammars are compiled on the
    // submitting thread, never on the engine thread.
    auto bad_grammar = greedy(e->model(), "x", 4);
    bad_grammar.grammar.type = COMMON_GRAMMAR_TYPE_USER;
    bad_grammar.grammar.grammar = "root ::= (((";
    EXPECT_EQ(e->submit(bad_grammar).err().code, errc::invalid_argument);
    EXPECT_EQ(collect(*submit_ok(*e, greedy(e->model(), "still serving", 2))).tokens.size(), 2u);
}

// ggml's OpenMP keeps a worker pool for each thread that computes a graph, for that thread's life. A
// pool left on the thread that started the engine (its step-cost calibration once ran there) made
// libgomp's threads outnumber two CPUs, and every decode barrier then slept: decode 3x slower than
// llama-server. Every thread the engine brought must end with it.
TEST(engine, graph_work_leaves_no_threads_on_the_starting_thread) {
    const int before = rc::test::threads_with_backend_started("tiny-chat");
    {
        engine::engine_options opts;
        opts.n_threads = 2;  // a one-thread graph makes no OpenMP pool at all
        auto e = start_engine("tiny-chat", opts);
        ASSERT_TRUE(e);
        EXPECT_EQ(collect(*submit_ok(*e, greedy(e->model(), "The quick brown fox", 4))).tokens.size(), 4u);
        EXPECT_GT(rc::test::process_threads(), before);  // the engine's thread and its compute pool
    }
    EXPECT_TRUE(poll_until([&] { return rc::test::process_threads() == before; }, std::chrono::seconds(10)))
        << rc::test::process_threads() - before << " thread(s) outlived the engine";
}

// A graph keeps every core busy, so an HTTP thread woken to send a token waited for a compute time
// slice: streamed gaps of 2-3 ms on two cores (1.84x llama-server's p99). The engine's thread and
// the compute workers it starts run nicer than the rest of the process; the caller's thread does not.
TEST(engine, compute_threads_run_nicer_than_the_threads_that_answer_clients) {
    errno = 0;
    const int base = getpriority(PRIO_PROCESS, 0);
    ASSERT_EQ(errno, 0);
    if (base + 3 > 19) GTEST_SKIP() << "this process already runs at nice " << base;
    const int before = rc::test::threads_at_nice(base + 3);
    engine::engine_options opts;
    opts.n_threads = 2;
    opts.compute_nice = 3;
    auto e = start_engine("tiny-chat", opts);
    ASSERT_TRUE(e);
    auto long_run = greedy(e->model(), "The quick brown fox", 400);
    long_run.sampling.ignore_eos = true;
    auto ch = submit_ok(*e, std::move(long_run));
    // The engine thread and its OpenMP worker, while they compute.
    EXPECT_TRUE(poll_until([&] { return rc::test::threads_at_nice(base + 3) >= before + 2; }, std::chrono::seconds(10)));
    EXPECT_EQ(collect(*ch).tokens.size(), 400u);
    EXPECT_EQ(getpriority(PRIO_PROCESS, 0), base) << "the caller's thread keeps its priority";

    opts.compute_nice = 0;
    auto same = start_engine("tiny-chat", opts);
    ASSERT_TRUE(same);
    EXPECT_EQ(collect(*submit_ok(*same, greedy(same->model(), "The quick brown fox", 4))).tokens.size(), 4u);
    e.reset();
    EXPECT_TRUE(poll_until([&] { return rc::test::threads_at_nice(base + 3) == before; }, std::chrono::seconds(10)))
        << "with --compute-nice 0 no thread runs nicer";
}

// Two loaded models on two cores: the idle one's parked OpenMP pool alone made libgomp throttle the
// busy one's barriers (decode 2.8x slower). An idle engine keeps only its own thread.
TEST(engine, an_idle_engine_hands_back_its_compute_threads) {
    const int before = rc::test::threads_with_backend_started("tiny-chat");
    engine::engine_options opts;
    opts.n_threads = 2;
    auto e = start_engine("tiny-chat", opts);
    ASSERT_TRUE(e);
    EXPECT_EQ(collect(*submit_ok(*e, greedy(e->model(), "The quick brown fox", 4))).tokens.size(), 4u);
    EXPECT_TRUE(poll_until([&] { return rc::test::process_threads() == before + 1; }, std::chrono::seconds(10)))
        << rc::test::process_threads() - before << " threads besides this one while the engine idles";
    // The next request starts a pool again and is served as before.
    EXPECT_EQ(collect(*submit_ok(*e, greedy(e->model(), "The quick brown fox", 4))).tokens.size(), 4u);
}
