// engine::lookup: it predicts, per tier, exactly the reuse the next request gets, and it changes
// nothing (statistics, evictions, and the reuse a later request gets are as without it).
#include <filesystem>

#include "engine_fixture.h"
#include "support/temp_dir.h"

using namespace rc;
using namespace rc::test;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

const char * prompt_a = "Alice asked about the history of the printing press and how it changed Europe in the fifteenth century";
const char * prompt_b = "Bob wants a recipe for sourdough bread with a long cold fermentation and a crispy crust please";

class kv_lookup : public ::testing::Test {
  protected:
    std::unique_ptr<engine::engine> start(size_t host_budget, bool disk, int cached_sequences) {
        engine::engine_options o;
        o.n_ctx = 2048;
        o.kv.block_size = 16;
        o.kv.host_budget = host_budget;
        o.kv.cached_sequences = cached_sequences;
        if (disk) {
            o.kv.disk_dir = disk_dir;
            o.kv.disk_budget = 64u << 20;
        }
        return start_engine("tiny-chat", o);
    }
    static std::vector<llama_token> tokens(engine::engine & e, const std::string & text) { return e.model().tokenize(text, true, false); }
    static run_result run(engine::engine & e, const std::vector<llama_token> & prompt, const std::string & salt = "") {
        engine::generation_request r;
        r.prompt = prompt;
        r.sampling.temperature = 0;
        r.max_tokens = 6;
        r.cache_salt = salt;
        auto out = collect(*submit_ok(e, std::move(r)));
        EXPECT_EQ(out.done.kind, engine::generation_event::type::done) << out.done.error.message;
        return out;
    }
    static engine::kv_lookup ask(engine::engine & e, const std::vector<llama_token> & prompt, const std::string & salt = "") {
        auto l = e.lookup(prompt, salt, 10s);
        EXPECT_TRUE(l.has_value()) << "the engine answers a lookup between steps";
        return l.value_or(engine::kv_lookup{});
    }
    // A request's "done" reaches the client before the engine retires its sequence and queues its
    // write-back, and A may leave the context before B even runs: a lookup is answered between steps
    // (two tokens: a one-token prompt is answered without the engine), so once it returns, the step
    // that finished the last request is over and its I/O can be drained.
    static void settle(engine::engine & e) {
        EXPECT_TRUE(e.lookup({1, 2}, "", 10s).has_value());
        e.kv()->drain_io();
    }
    // Every counter a lookup must leave alone.
    static std::vector<uint64_t> counters(engine::engine & e) {
        const auto st = e.kv_stats();
        std::vector<uint64_t> out = {e.stats().prompt_tokens, st.prompt_tokens.computed, st.prompt_tokens.context,
                                     st.prompt_tokens.host, st.prompt_tokens.disk, st.evictions.context, st.evictions.host,
                                     st.evictions.disk, st.preemptions, st.host.bytes, st.host.blocks, st.disk.blocks};
        for (const auto & f : kv::k_move_fields) out.push_back((st.moves.*f.field).blocks);
        return out;
    }
    // A request's reuse by the tier it came from, as the planner's counters saw it.
    struct reuse_by_tier {
        uint64_t context = 0, host = 0, disk = 0;
    };
    static reuse_by_tier sources(engine::engine & e) {
        const auto p = e.kv_stats().prompt_tokens;
        return {p.context, p.host, p.disk};
    }
    // Runs `prompt` and checks that the lookup `l` predicted its reuse tier by tier.
    static void run_as_predicted(engine::engine & e, const std::vector<llama_token> & prompt, const engine::kv_lookup & l) {
        const auto before = sources(e);
        auto out = run(e, prompt);
        const auto after = sources(e);
        EXPECT_EQ(out.done.usage.cached_tokens, l.cached()) << "the prediction is what the request then reuses";
        EXPECT_EQ(after.context - before.context, static_cast<uint64_t>(l.context));
        EXPECT_EQ(after.host - before.host, static_cast<uint64_t>(l.host));
        EXPECT_EQ(after.disk - before.disk, static_cast<uint64_t>(l.disk));
    }
    static int all_but_last(size_t n) { return static_cast<int>(n) - 1; }

    temp_dir tmp_{"lookup"};  // fresh for each test, removed after it
    const fs::path disk_dir = tmp_.path();
};

}  // namespace

TEST_F(kv_lookup, predicts_context_reuse_and_changes_nothing) {
    auto e = start(16u << 20, false, 2);
    ASSERT_TRUE(e);
    auto a = tokens(*e, prompt_a);
    auto cold = ask(*e, a);
    EXPECT_EQ(cold.prompt_tokens, static_cast<int>(a.size()));
    EXPECT_EQ(cold.cached(), 0) << "nothing ran yet";

    run(*e, a);
    const auto before = counters(*e);
    auto warm = ask(*e, a);
    for (int i = 0; i < 3; ++i) ask(*e, a);
    EXPECT_EQ(counters(*e), before) << "lookups change no statistic";
    EXPECT_EQ(warm.context, static_cast<int>(a.size()) - 1) << "all but the last prompt token are in the context";
    EXPECT_EQ(warm.host + warm.disk, 0);
    run_as_predicted(*e, a, warm);

    // A different cache salt shares nothing, an unrelated prompt neither.
    EXPECT_EQ(ask(*e, a, "tenant-2").cached(), 0);
    EXPECT_EQ(ask(*e, tokens(*e, prompt_b)).cached(), 0);
    // A token outside the vocabulary: no answer rather than a wrong one.
    EXPECT_FALSE(e->lookup({1, 2, e->model().info().n_vocab + 5}, "", 1s).has_value());
}

TEST_F(kv_lookup, reports_host_and_disk_tiers_without_promoting) {
    auto e = start(0, true, 1);  // no host budget: an evicted conversation goes to disk
    ASSERT_TRUE(e);
    auto a = tokens(*e, prompt_a), b = tokens(*e, prompt_b);
    run(*e, a);
    run(*e, b);  // one idle conversation is kept: A's blocks leave the context
    ASSERT_TRUE(poll_until([&] { return e->kv_stats().evictions.context == 1; }));
    settle(*e);
    const auto before = counters(*e);
    auto l = ask(*e, a);
    EXPECT_EQ(l.context, 0);
    EXPECT_EQ(l.host, 0);
    EXPECT_EQ(l.disk, all_but_last(a.size())) << "A's blocks, the last one trimmed at the prompt's end";
    e->kv()->drain_io();
    EXPECT_EQ(counters(*e), before) << "a lookup reads nothing from disk";
    EXPECT_EQ(e->kv()->host_bytes(), 0u) << "and promotes nothing to host RAM";
    EXPECT_EQ(ask(*e, b).context, all_but_last(b.size())) << "B is still the idle conversation in the context";
    run_as_predicted(*e, a, l);
}

TEST_F(kv_lookup, reports_host_tier) {
    auto e = start(32u << 20, false, 1);
    ASSERT_TRUE(e);
    auto a = tokens(*e, prompt_a);
    run(*e, a);
    run(*e, tokens(*e, prompt_b));
    ASSERT_TRUE(poll_until([&] { return e->kv_stats().evictions.context == 1; }));
    const auto before = counters(*e);
    auto l = ask(*e, a);
    EXPECT_EQ(counters(*e), before);
    EXPECT_EQ(l.context, 0);
    EXPECT_EQ(l.host, all_but_last(a.size()));
    EXPECT_EQ(l.disk, 0);
    run_as_predicted(*e, a, l);
}

TEST_F(kv_lookup, a_resumed_conversation_counts_context_and_host_separately) {
    // A's first turn is demoted to host RAM; a second conversation sharing A's opening stays in the
    // context. A's second turn then takes the shared opening from the context and the rest from host.
    auto e = start(32u << 20, false, 1);
    ASSERT_TRUE(e);
    auto a = tokens(*e, prompt_a);
    auto turn1 = run(*e, a);
    std::vector<llama_token> opening(a.begin(), a.begin() + 20);
    auto other = opening;
    auto tail = e->model().tokenize(" and then about something else entirely, like the weather", false, false);
    other.insert(other.end(), tail.begin(), tail.end());
    run(*e, other);  // one idle conversation kept: A leaves the context, `other` holds A's first 20 tokens
    ASSERT_TRUE(poll_until([&] { return e->kv_stats().evictions.context == 1; }));
    std::vector<llama_token> turn2 = a;
    turn2.insert(turn2.end(), turn1.tokens.begin(), turn1.tokens.end());
    auto more = e->model().tokenize(" and what about Gutenberg?", false, false);
    turn2.insert(turn2.end(), more.begin(), more.end());
    auto l = ask(*e, turn2);
    EXPECT_GE(l.context, 16) << "the shared opening's cells are in the context";
    EXPECT_GT(l.host, 0) << "the rest of A's first turn is in host RAM";
    EXPECT_EQ(l.disk, 0);
    run_as_predicted(*e, turn2, l);
}
