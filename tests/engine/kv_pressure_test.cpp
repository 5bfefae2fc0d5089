// KV tiering where memory is scarce (the KV-pressure issue): context pools barely larger than one
// conversation, rotations whose KV is several times the pool, running sequences that together need
// more cells than the pool has. No decode or restore may fail (engine_fixture.h turns llama.cpp's
// "failed to find" lines into failures), every resume reuses what was stored, and greedy output equals
// a run with an ample pool. The model is tiny-chat-f32 (greedy_margin.h): KV cells land in different
// places in a tight pool than in an ample one, and only that model keeps the numerics out of the way.
#include <filesystem>
#include <thread>

#include "engine_fixture.h"
#include "greedy_margin.h"
#include "support/exact_kernels.h"
#include "support/temp_dir.h"

using namespace rc;
using namespace rc::test;
namespace fs = std::filesystem;

namespace {

struct setup {
    int n_ctx = 512;
    int parallel = 1;
    size_t host_budget = 64u << 20;
    bool disk = false;
    int cached_sequences = 8;  // the default
};

class kv_pressure : public ::testing::Test {
  protected:
    std::unique_ptr<engine::engine> start(const setup & s) {
        engine::engine_options o;
        o.n_ctx = s.n_ctx;
        o.n_parallel = s.parallel;
        o.kv_type = GGML_TYPE_F32;
        o.kv.block_size = 16;
        o.kv.host_budget = s.host_budget;
        o.kv.cached_sequences = s.cached_sequences;
        if (s.disk) {
            o.kv.disk_dir = disk_dir;
            o.kv.disk_budget = 256u << 20;
        }
        return start_engine(k_layout_model, o);
    }
    static engine::generation_request req(const std::vector<llama_token> & prompt, int max_tokens, bool reference = false) {
        engine::generation_request r;
        r.prompt = prompt;
        r.sampling.temperature = 0;
        r.sampling.ignore_eos = true;  // every request generates exactly max_tokens
        r.max_tokens = max_tokens;
        if (reference) r.logprobs_top = 2;
        return r;
    }
    static std::vector<llama_token> words(engine::engine & e, int c, int n, bool bos = true) {
        std::string text = "Conversation " + std::to_string(c) + ":";
        for (int w = 0; w < n; ++w) text += " item" + std::to_string(c * 1000 + w);
        return e.model().tokenize(text, bos, false);
    }
    static run_result run(engine::engine & e, const std::vector<llama_token> & prompt, int max_tokens, bool reference = false) {
        auto r = collect(*submit_ok(e, req(prompt, max_tokens, reference)));
        EXPECT_EQ(r.done.kind, engine::generation_event::type::done) << r.done.error.message;
        return r;
    }

    temp_dir tmp_{"kvp"};  // fresh for each test, removed after it
    const fs::path disk_dir = tmp_.path();
};

// A rotation of conversations: turn t of each in turn. Returns each request's result, in order.
// Conversation ids pick prompts whose greedy references have no near-ties (greedy_margin.h).
struct rotation {
    int first = 4, conversations = 4, turns = 3, first_words = 20, gen = 16;
};

std::vector<run_result> rotate(engine::engine & e, const rotation & r, bool reference, std::vector<int> * new_tokens = nullptr) {
    std::vector<std::vector<llama_token>> convo(static_cast<size_t>(r.conversations));
    std::vector<run_result> out;
    for (int t = 0; t < r.turns; ++t) {
        for (int c = 0; c < r.conversations; ++c) {
            auto & p = convo[static_cast<size_t>(c)];
            std::vector<llama_token> fresh;
            if (t == 0) {
                std::string text = "Conversation " + std::to_string(r.first + c) + ":";
                for (int w = 0; w < r.first_words; ++w) text += " item" + std::to_string((r.first + c) * 1000 + w);
                fresh = e.model().tokenize(text, true, false);
            } else {
                fresh = e.model().tokenize(" and turn " + std::to_string(t) + " asks about " + std::to_string(c * 7 + t), false, false);
            }
            p.insert(p.end(), fresh.begin(), fresh.end());
            if (new_tokens) new_tokens->push_back(static_cast<int>(fresh.size()));
            engine::generation_request q;
            q.prompt = p;
            q.sampling.temperature = 0;
            q.sampling.ignore_eos = true;
            q.max_tokens = r.gen;
            if (reference) q.logprobs_top = 2;
            auto res = collect(*submit_ok(e, q));
            EXPECT_EQ(res.done.kind, engine::generation_event::type::done) << "conversation " << c << " turn " << t << ": " << res.done.error.message;
            p.insert(p.end(), res.tokens.begin(), res.tokens.end());
            out.push_back(std::move(res));
        }
    }
    return out;
}

}  // namespace

// --parallel 1, a pool 1.3-1.5× one conversation, four conversations in turns: 3× the pool in all.
TEST_F(kv_pressure, a_rotation_on_a_tight_single_slot_pool_reuses_every_stored_block_and_matches_an_ample_pool) {
    rotation r;
    std::vector<run_result> ref;
    {
        auto ample = start({.n_ctx = 8192, .parallel = 1});
        ASSERT_TRUE(ample);
        ref = rotate(*ample, r, true);
    }
    for (size_t i = 0; i < ref.size(); ++i) expect_clear_greedy_margins(ref[i], "request " + std::to_string(i));
    const int last_conversation = ref.back().done.usage.prompt_tokens + r.gen - 1;
    const int pool = last_conversation * 14 / 10;

    auto e = start({.n_ctx = pool, .parallel = 1});
    ASSERT_TRUE(e);
    std::vector<int> fresh;
    auto got = rotate(*e, r, false, &fresh);
    ASSERT_EQ(got.size(), ref.size());
    int total_kv = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_SAME_OUTPUT(got[i].tokens, ref[i].tokens) << "request " << i;
        total_kv += got[i].done.usage.prompt_tokens + r.gen;
        if (i < static_cast<size_t>(r.conversations)) continue;
        // A resume: everything but the new turn and the one token of ours that never reached the context.
        EXPECT_EQ(got[i].done.usage.cached_tokens, got[i].done.usage.prompt_tokens - fresh[i] - 1) << "request " << i;
    }
    EXPECT_GE(total_kv, 2 * pool) << "the rotation must be several times the pool";
    EXPECT_GT(e->kv_stats().prompt_tokens.host, 0u);
    EXPECT_EQ(e->stats().requests_failed, 0u);
}

// --parallel 4 on a pool holding about two of them: the same rotation, four conversations at once.
TEST_F(kv_pressure, concurrent_conversations_on_a_tight_pool_complete_identically) {
    rotation r{.first = 8, .conversations = 4, .turns = 2, .first_words = 20, .gen = 16};
    std::vector<run_result> ref;
    {
        auto ample = start({.n_ctx = 8192, .parallel = 1});
        ASSERT_TRUE(ample);
        ref = rotate(*ample, r, true);
    }
    for (size_t i = 0; i < ref.size(); ++i) expect_clear_greedy_margins(ref[i], "request " + std::to_string(i));
    const int one = ref.back().done.usage.prompt_tokens + r.gen;
    auto e = start({.n_ctx = one * 25 / 10, .parallel = 4});
    ASSERT_TRUE(e);
    // Each turn's four requests run at once.
    std::vector<std::vector<llama_token>> convo(4);
    size_t k = 0;
    for (int t = 0; t < r.turns; ++t) {
        std::vector<std::shared_ptr<engine::request_channel>> chans;
        for (int c = 0; c < 4; ++c) {
            std::vector<llama_token> fresh;
            if (t == 0) {
                fresh = words(*e, r.first + c, r.first_words);
            } else {
                fresh = e->model().tokenize(" and turn " + std::to_string(t) + " asks about " + std::to_string(c * 7 + t), false, false);
            }
            convo[static_cast<size_t>(c)].insert(convo[static_cast<size_t>(c)].end(), fresh.begin(), fresh.end());
            chans.push_back(submit_ok(*e, req(convo[static_cast<size_t>(c)], r.gen)));
        }
        for (int c = 0; c < 4; ++c, ++k) {
            auto res = collect(*chans[static_cast<size_t>(c)]);
            ASSERT_EQ(res.done.kind, engine::generation_event::type::done) << res.done.error.message;
            EXPECT_EQ(res.tokens, ref[k].tokens) << "conversation " << c << " turn " << t;
            convo[static_cast<size_t>(c)].insert(convo[static_cast<size_t>(c)].end(), res.tokens.begin(), res.tokens.end());
        }
    }
    EXPECT_EQ(e->stats().requests_failed, 0u);
}

// The second reproduction: four long generations on a pool that holds two. Today the
// youngest got a 400; now the youngest are swapped out to host RAM and resumed, and every output
// equals the output of running it alone.
TEST_F(kv_pressure, four_long_generations_on_a_pool_that_holds_two_are_preempted_not_failed) {
    const int gen = 60;
    std::vector<std::vector<llama_token>> prompts;
    std::vector<run_result> alone;
    {
        auto ample = start({.n_ctx = 4096, .parallel = 1, .cached_sequences = 0});
        ASSERT_TRUE(ample);
        for (int c : {5, 6, 8, 9}) {
            prompts.push_back(words(*ample, c, 20));
            alone.push_back(run(*ample, prompts.back(), gen, true));
            expect_clear_greedy_margins(alone.back(), "conversation " + std::to_string(c));
        }
    }
    const int one = static_cast<int>(prompts[3].size()) + gen;
    for (bool with_host : {true, false}) {
        SCOPED_TRACE(with_host ? "swap to host RAM" : "no host tier: recompute");
        auto e = start({.n_ctx = one * 22 / 10, .parallel = 4, .host_budget = with_host ? (64u << 20) : 0});
        ASSERT_TRUE(e);
        std::vector<std::shared_ptr<engine::request_channel>> chans;
        for (const auto & p : prompts) chans.push_back(submit_ok(*e, req(p, gen)));
        for (int c = 0; c < 4; ++c) {
            auto r = collect(*chans[static_cast<size_t>(c)]);
            ASSERT_EQ(r.done.kind, engine::generation_event::type::done) << "conversation " << c << ": " << r.done.error.message;
            EXPECT_SAME_OUTPUT(r.tokens, alone[static_cast<size_t>(c)].tokens) << "conversation " << c;
            EXPECT_EQ(r.done.usage.completion_tokens, gen);
        }
        EXPECT_GT(e->kv_stats().preemptions, 0u) << "the pool holds two: someone had to give way";
        EXPECT_EQ(e->stats().requests_failed, 0u);
        if (with_host) {
            EXPECT_GT(e->kv_stats().prompt_tokens.host, 0u) << "a swapped-out sequence came back from host RAM";
        }
    }
}

// The first reproduction, scaled down: one slot, a pool 1.4× a prompt, prompt A, a different
// prompt B, then A again. No decode or restore fails for lack of cells (before, both did and the
// engine retried after evicting), and A comes back whole: only its last token is computed.
TEST_F(kv_pressure, single_slot_resume_restores_all_but_the_last_token_without_failed_decodes) {
    auto probe = start({.n_ctx = 4096});
    ASSERT_TRUE(probe);
    auto a = words(*probe, 1, 90), b = words(*probe, 2, 90);
    probe.reset();
    for (bool disk : {false, true}) {
        SCOPED_TRACE(disk ? "with a disk tier" : "host tier only");
        fs::remove_all(disk_dir);
        auto e = start({.n_ctx = static_cast<int>(a.size()) * 14 / 10, .parallel = 1, .disk = disk});
        ASSERT_TRUE(e);
        auto first = run(*e, a, 16);
        run(*e, b, 16);
        auto again = run(*e, a, 1);
        EXPECT_EQ(again.tokens.front(), first.tokens.front());
        EXPECT_EQ(again.done.usage.cached_tokens, static_cast<int>(a.size()) - 1);
        EXPECT_EQ(e->stats().requests_failed, 0u);
    }
}

// Prefix sharing under pressure: conversations that share a system prompt evict their own tails
// first; the shared head stays in the context as long as any holder needs it.
TEST_F(kv_pressure, a_shared_system_prompt_survives_pressure_while_tails_are_evicted) {
    auto e0 = start({.n_ctx = 4096});
    ASSERT_TRUE(e0);
    std::string sys = "System: you are a careful assistant.";
    for (int w = 0; w < 40; ++w) sys += " rule" + std::to_string(w);
    auto shared = e0->model().tokenize(sys, true, false);
    e0.reset();
    auto e = start({.n_ctx = static_cast<int>(shared.size()) + 100, .parallel = 1});
    ASSERT_TRUE(e);
    for (int c = 0; c < 6; ++c) {
        auto p = shared;
        auto tail = e->model().tokenize(" user " + std::to_string(c) + " asks question " + std::to_string(c * 13), false, false);
        p.insert(p.end(), tail.begin(), tail.end());
        auto r = run(*e, p, 24);
        if (c > 0) {
            EXPECT_GE(r.done.usage.cached_tokens, static_cast<int>(shared.size())) << "conversation " << c;
        }
    }
    EXPECT_GT(e->kv_stats().evictions.context, 0u);
    EXPECT_GT(e->kv_stats().prompt_tokens.context, 0u) << "the shared head was reused from the context";
}
