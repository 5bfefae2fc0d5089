// Stall-free scheduling (the scheduling issue): the per-step prefill budget comes from a step cost
// model, so the very first long prompt on a fresh engine is cut into chunks and the streams already
// decoding keep getting tokens while it is prefilled. The model costs nothing at load (issue 34): it
// is remembered across loads (step_cost_cache.h), else learned from the first steps.
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "engine_fixture.h"
#include "support/temp_dir.h"

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

// A step cost file in a directory of its own, removed at the end.
struct cost_file {
    temp_dir dir{"step-cost"};
    std::filesystem::path file = dir.path() / ".state" / "step-cost.json";
    nlohmann::json read() const {
        std::ifstream in(file);
        return in ? nlohmann::json::parse(in, nullptr, false) : nlohmann::json();
    }
};

// About 70 prompt tokens (a step the model learns `per_token` from, a sequence long enough to
// measure a cell), then 8 decode-only steps.
engine::generation_request prompt_of(const llama::model & m, int i) {
    engine::generation_request r;
    std::string text = "Case " + std::to_string(i) + ":";  // a new first token each time: no prefix to reuse
    for (int w = 0; w < 24; ++w) text += " word" + std::to_string(w) + " and";
    r.prompt = m.tokenize(text, true, false);
    r.sampling.temperature = 0;
    r.max_tokens = 8;
    return r;
}

// Requests one after another: each is a prefill step of several tokens and decode-only steps,
// which is what the model learns from; until the engine has stored what it learned.
void run_until_stored(engine::engine & e, const cost_file & f) {
    for (int i = 0; i < 12 && !std::filesystem::exists(f.file); ++i) {
        auto r = collect(*submit_ok(e, prompt_of(e.model(), i)));
        ASSERT_EQ(r.done.kind, engine::generation_event::type::done) << r.done.error.message;
    }
}

}  // namespace

TEST(step_budget, a_fresh_engine_runs_no_timed_decodes_and_learns_its_step_cost_from_the_first_steps) {
    auto e = start_engine("tiny-chat");
    ASSERT_TRUE(e);
    auto st = e->stats();
    EXPECT_EQ(st.step_per_token_ms, 0.0) << "nothing remembered, nothing timed at load";
    EXPECT_EQ(st.step_tokens.count, 0u) << "no step before the first request";
    EXPECT_EQ(st.prefill_budget, 16) << "one aligned chunk until a step has taught the cost";
    auto r = collect(*submit_ok(*e, greedy(e->model(), "Tell me a long story about a cat and a dog", 6)));
    ASSERT_EQ(r.done.kind, engine::generation_event::type::done) << r.done.error.message;
    st = e->stats();
    EXPECT_GT(st.step_per_token_ms, 0.0) << "learned from the prompt's step";
    EXPECT_GE(st.step_fixed_ms, 0.0);
    EXPECT_GT(st.prefill_budget, 16) << "chunks are sized by the learned model now (a tiny model: far more than one fits 1.5 s)";
}

TEST(step_budget, a_restarted_engine_remembers_its_step_cost_and_a_stale_one_is_replaced) {
    cost_file f;
    engine::engine_options o;
    o.step_cost_file = f.file;
    double learned = 0;
    {
        auto e = start_engine("tiny-chat", o);
        ASSERT_TRUE(e);
        run_until_stored(*e, f);
        ASSERT_TRUE(std::filesystem::exists(f.file)) << "stored once the model stood on enough steps";
        learned = e->stats().step_per_token_ms;
    }
    auto doc = f.read();
    ASSERT_TRUE(doc.is_object());
    ASSERT_EQ(doc["entries"].size(), 1u);
    const auto key = doc["entries"].begin().key();
    const double stored = doc["entries"][key]["per_token_ms"].get<double>();
    EXPECT_GT(stored, 0.0);
    EXPECT_GT(doc["entries"][key]["cell_bytes"].get<double>(), 0.0) << "measured by the warm-up and remembered with the step cost";
    {
        auto e = start_engine("tiny-chat", o);
        ASSERT_TRUE(e);
        EXPECT_DOUBLE_EQ(e->stats().step_per_token_ms, stored) << "known before the first request";
        EXPECT_EQ(e->stats().step_tokens.count, 0u);
    }
    {
        engine::engine_options other = o;
        other.n_threads = 2;  // another machine configuration: another key
        auto e = start_engine("tiny-chat", other);
        ASSERT_TRUE(e);
        EXPECT_EQ(e->stats().step_per_token_ms, 0.0) << "an entry for one thread count never serves another";
    }
    // Stale: the entry says every token costs 50 times what it does here.
    doc["entries"][key]["per_token_ms"] = stored * 50;
    std::ofstream(f.file) << doc.dump();
    {
        auto e = start_engine("tiny-chat", o);
        ASSERT_TRUE(e);
        EXPECT_DOUBLE_EQ(e->stats().step_per_token_ms, stored * 50);
        for (int i = 0; i < 12 && f.read()["entries"][key]["per_token_ms"].get<double>() >= stored * 10; ++i) {
            auto r = collect(*submit_ok(*e, prompt_of(e->model(), i)));
            ASSERT_EQ(r.done.kind, engine::generation_event::type::done) << r.done.error.message;
        }
        const double replaced = f.read()["entries"][key]["per_token_ms"].get<double>();
        EXPECT_LT(replaced, stored * 10) << "the stale entry was detected and replaced (learned " << learned << ")";
    }
}

TEST(step_budget, the_first_long_prompt_on_a_fresh_engine_is_chunked_while_a_stream_keeps_decoding) {
    // Size the bound so that about 48 tokens fit a step on this machine, whatever its speed: learn the
    // step cost on a probe engine first.
    cost_file f;
    double fixed = 0, per_token = 0;
    {
        engine::engine_options po;
        po.step_cost_file = f.file;
        auto probe = start_engine("tiny-chat", po);
        ASSERT_TRUE(probe);
        run_until_stored(*probe, f);
        fixed = probe->stats().step_fixed_ms;
        per_token = probe->stats().step_per_token_ms;
        ASSERT_GT(per_token, 0.0);
    }
    // The engine under test remembers nothing: it learns while the long prompt is prefilled.
    engine::engine_options o;
    o.n_ctx = 4096;
    o.max_step_ms = fixed + 48 * per_token;
    auto e = start_engine("tiny-chat", o);
    ASSERT_TRUE(e);
    auto lp = long_prompt(e->model(), 120);
    ASSERT_GT(lp.size(), 300u);
    ASSERT_EQ(e->stats().prefill_budget, 16) << "nothing learned yet: one aligned chunk";

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
    const int budget = e->stats().prefill_budget;
    EXPECT_GE(chunks, 2u) << "the long prompt was cut into chunks (budget " << budget << " of " << lp.size() << " tokens)";
    int during = 0;
    for (auto t : bg.tokens) during += t > submitted && t < longr.tokens.front() ? 1 : 0;
    EXPECT_GE(during, static_cast<int>(chunks) - 2) << "the stream got a token in (about) every step that prefilled a chunk";
    EXPECT_GT(e->stats().step_tokens.count, 0u);
}
