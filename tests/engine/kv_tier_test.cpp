// KV tiering through the engine (ARCHITECTURE.md §5) on the Q8_0 model with an F32 KV cache, where a
// restored block gives bit-identical logits: greedy output after demoting to host, to disk, and
// after a restart must equal a run that never evicted.
#include <filesystem>
#include <fstream>

#include "engine_fixture.h"
#include "greedy_margin.h"
#include "support/exact_kernels.h"
#include "support/temp_dir.h"

using namespace rc;
using namespace rc::test;
namespace fs = std::filesystem;

namespace {

struct tier_setup {
    size_t host_budget = 0;
    bool disk = false;
    int cached_sequences = 1;
};

class kv_tiers : public ::testing::Test {
  protected:
    std::unique_ptr<engine::engine> start(const tier_setup & t, int n_ctx = 4096, const std::string & model = "tiny-chat-q8") {
        engine::engine_options o;
        o.n_ctx = n_ctx;
        o.kv_type = GGML_TYPE_F32;
        o.kv.block_size = 16;
        o.kv.host_budget = t.host_budget;
        o.kv.cached_sequences = t.cached_sequences;
        if (t.disk) {
            o.kv.disk_dir = disk_dir;
            o.kv.disk_budget = 256u << 20;
        }
        return start_engine(model, o);
    }

    static engine::generation_request req(const std::vector<llama_token> & prompt, int max_tokens, const std::string & salt = "") {
        engine::generation_request r;
        r.prompt = prompt;
        r.sampling.temperature = 0;
        r.max_tokens = max_tokens;
        r.cache_salt = salt;
        return r;
    }
    static std::vector<llama_token> tokens(engine::engine & e, const std::string & text) { return e.model().tokenize(text, true, false); }
    static run_result run(engine::engine & e, const std::vector<llama_token> & prompt, int max_tokens = 12, const std::string & salt = "") {
        auto r = collect(*submit_ok(e, req(prompt, max_tokens, salt)));
        EXPECT_EQ(r.done.kind, engine::generation_event::type::done) << r.done.error.message;
        return r;
    }
    // A, then B, then A again with a host tier of `host_budget` bytes and no disk: A must stay in the
    // context while B runs, and its next turn is reused from there in full.
    void expect_idle_conversation_stays(size_t host_budget);

    temp_dir tmp_{"kv"};  // fresh for each test, removed after it
    const fs::path disk_dir = tmp_.path();
};

// Resending a stored conversation's prompt (a regenerate) reuses all of it but its last token, whose
// logits start the generation: the block holding that point is restored and trimmed (a prompt-end
// alias). A resumed conversation, which extends the stored one, gets the stored blocks as they are.
int all_but_last(size_t prompt_tokens) { return static_cast<int>(prompt_tokens) - 1; }

const char * prompt_a = "Alice asked about the history of the printing press and how it changed Europe in the fifteenth century";
const char * prompt_b = "Bob wants a recipe for sourdough bread with a long cold fermentation and a crispy crust please";

}  // namespace

TEST_F(kv_tiers, context_prefix_is_reused_and_output_is_identical) {
    auto e = start({});
    ASSERT_TRUE(e);
    auto a = tokens(*e, prompt_a);
    auto first = run(*e, a);
    EXPECT_EQ(first.done.usage.cached_tokens, 0);
    auto again = run(*e, a);
    EXPECT_SAME_OUTPUT(again.tokens, first.tokens);
    EXPECT_EQ(again.done.usage.cached_tokens, static_cast<int>(a.size()) - 1) << "all but the last prompt token come from the context";
}

TEST_F(kv_tiers, demoted_to_host_then_restored_gives_identical_greedy_output) {
    auto e = start({.host_budget = 64u << 20, .cached_sequences = 1});
    ASSERT_TRUE(e);
    auto a = tokens(*e, prompt_a), b = tokens(*e, prompt_b);
    auto first = run(*e, a);
    run(*e, b);  // only one idle conversation is kept: A's blocks move to host RAM
    EXPECT_TRUE(poll_until([&] { return e->kv_stats().evictions.context == 1; }));
    EXPECT_GT(e->kv()->host_bytes(), 0u);
    uint64_t computed_before = e->kv_stats().prompt_tokens.computed;
    auto again = run(*e, a);
    EXPECT_SAME_OUTPUT(again.tokens, first.tokens) << "restored KV must give the same greedy output";
    EXPECT_EQ(again.done.usage.cached_tokens, all_but_last(a.size()));
    EXPECT_EQ(e->kv_stats().prompt_tokens.host, static_cast<uint64_t>(all_but_last(a.size())));
    EXPECT_EQ(e->kv_stats().prompt_tokens.computed - computed_before, a.size() - all_but_last(a.size()));
}

TEST_F(kv_tiers, resumed_conversation_recomputes_only_the_new_turn_plus_one) {
    auto e = start({.host_budget = 64u << 20, .cached_sequences = 1});
    ASSERT_TRUE(e);
    auto a = tokens(*e, prompt_a);
    auto turn1 = run(*e, a, 20);
    run(*e, tokens(*e, prompt_b));  // evicts A to host, including its partial tail block
    // Turn 2: everything the model saw and said, plus new user tokens.
    std::vector<llama_token> turn2 = a;
    turn2.insert(turn2.end(), turn1.tokens.begin(), turn1.tokens.end());
    auto more = e->model().tokenize(" and what about Gutenberg?", false, false);
    turn2.insert(turn2.end(), more.begin(), more.end());
    auto r = run(*e, turn2);
    int recomputed = r.done.usage.prompt_tokens - r.done.usage.cached_tokens;
    EXPECT_LE(recomputed, static_cast<int>(more.size()) + 1) << "prompt " << r.done.usage.prompt_tokens << " cached " << r.done.usage.cached_tokens;
}

TEST_F(kv_tiers, a_resume_without_our_reply_recomputes_only_the_new_turn_plus_one) {
    auto e = start({.host_budget = 64u << 20, .cached_sequences = 1});
    ASSERT_TRUE(e);
    auto a = tokens(*e, prompt_a);
    ASSERT_NE(a.size() % 16, 0u) << "the prompt must end inside a block for this test";
    auto turn1 = run(*e, a, 20);
    run(*e, tokens(*e, prompt_b));  // evicts A to host
    // The client edited (or re-rendered) our reply: it diverges where the reply began.
    std::vector<llama_token> edited = a;
    auto more = e->model().tokenize(" Actually, tell me about movable type instead.", false, false);
    edited.insert(edited.end(), more.begin(), more.end());
    auto r = run(*e, edited);
    EXPECT_EQ(r.done.usage.cached_tokens, static_cast<int>(a.size()));
    EXPECT_LE(r.done.usage.prompt_tokens - r.done.usage.cached_tokens, static_cast<int>(more.size()) + 1);

    // Identical output to computing the edited prompt from scratch on a fresh engine.
    auto fresh = start({});
    ASSERT_TRUE(fresh);
    EXPECT_EQ(run(*fresh, edited).tokens, r.tokens);
}

TEST_F(kv_tiers, interleaved_sequences_in_a_fragmented_cell_pool_restore_identically) {
    // Shared prefixes and restored blocks land wherever the pool has holes, a layout the reference
    // never sees: on the F32 model that changes logits by less than the layout bound, and the
    // reference is checked for near-ties first, so only a KV bookkeeping error can change a token.
    std::vector<std::vector<llama_token>> prompts;
    auto ref_engine = start({}, 4096, k_layout_model);
    ASSERT_TRUE(ref_engine);
    for (int c = 0; c < 10; ++c) {
        std::string text = "Thread " + std::to_string(c) + " says";
        for (int w = 0; w < 4 + 2 * c; ++w) text += " w" + std::to_string(c * 31 + w);  // lengths differ: holes differ
        prompts.push_back(tokens(*ref_engine, text));
    }
    std::vector<std::vector<llama_token>> ref;
    for (int c = 0; c < 10; ++c) {
        auto r = req(prompts[c], 10);
        r.logprobs_top = 2;
        auto done = collect(*submit_ok(*ref_engine, std::move(r)));
        expect_clear_greedy_margins(done, "conversation " + std::to_string(c));
        ref.push_back(done.tokens);
    }
    ref_engine.reset();

    // A small pool, four sequences decoding at once with different lengths, conversations kept idle
    // and evicted in between: cells are freed out of order, so restored blocks land in a pool full
    // of holes.
    auto e = start({.host_budget = 64u << 20, .cached_sequences = 2}, 512, k_layout_model);
    ASSERT_TRUE(e);
    for (int round = 0; round < 3; ++round) {
        std::vector<std::pair<int, std::shared_ptr<engine::request_channel>>> running;
        for (int k = 0; k < 10; ++k) {
            int c = (k * 3 + round) % 10;
            running.emplace_back(c, submit_ok(*e, req(prompts[c], 10)));
            if (running.size() == 4 || k == 9) {
                for (auto & [idx, ch] : running) {
                    auto r = collect(*ch);
                    ASSERT_EQ(r.done.kind, engine::generation_event::type::done) << r.done.error.message;
                    EXPECT_EQ(r.tokens, ref[idx]) << "conversation " << idx << " round " << round;
                }
                running.clear();
            }
        }
    }
    EXPECT_GT(e->kv_stats().prompt_tokens.host, 0u) << "some prompts came back from the host tier";
}

TEST_F(kv_tiers, disk_tier_restores_after_host_eviction_and_survives_a_restart) {
    run_result first;
    std::vector<llama_token> a;
    {
        auto e = start({.host_budget = 0, .disk = true, .cached_sequences = 1});
        ASSERT_TRUE(e);
        a = tokens(*e, prompt_a);
        first = run(*e, a);
        run(*e, tokens(*e, prompt_b));
        ASSERT_TRUE(poll_until([&] { return e->kv_stats().evictions.context == 1; }));
        e->kv()->drain_io();
        EXPECT_GT(e->kv()->disk_blocks(), 0u);
        auto again = run(*e, a);
        EXPECT_SAME_OUTPUT(again.tokens, first.tokens);
        EXPECT_EQ(e->kv_stats().prompt_tokens.disk, static_cast<uint64_t>(all_but_last(a.size())));
        e->kv()->drain_io();
    }
    // A new engine (a restarted server) finds the blocks on disk.
    auto e = start({.host_budget = 32u << 20, .disk = true});
    ASSERT_TRUE(e);
    EXPECT_GT(e->kv()->disk_blocks(), 0u);
    auto after_restart = run(*e, a);
    EXPECT_SAME_OUTPUT(after_restart.tokens, first.tokens) << "output after a restart equals the never-evicted run";
    EXPECT_EQ(after_restart.done.usage.cached_tokens, all_but_last(a.size()));
    EXPECT_EQ(e->kv_stats().prompt_tokens.disk, static_cast<uint64_t>(all_but_last(a.size())));
}

// --kv-write-through: a request's "done" arrives once its blocks are on disk (the engine thread
// itself never waits for the disk: the I/O pool sends the event).
TEST_F(kv_tiers, write_through_reports_done_only_once_the_blocks_are_on_disk) {
    engine::engine_options o;
    o.n_ctx = 4096;
    o.kv_type = GGML_TYPE_F32;
    o.kv.block_size = 16;
    o.kv.disk_dir = disk_dir;
    o.kv.disk_budget = 64u << 20;
    o.kv.write_through = true;
    auto e = start_engine("tiny-chat-q8", o);
    ASSERT_TRUE(e);
    auto a = tokens(*e, prompt_a);
    for (int i = 0; i < 3; ++i) {
        auto p = a;
        p.push_back(static_cast<llama_token>(1000 + i));
        run(*e, p, 20);
        // No waiting here: the blocks of the conversation just finished are already files.
        const size_t expected = (p.size() + 19) / 16 + ((p.size() + 19) % 16 ? 1 : 0);
        EXPECT_GE(e->kv()->disk_blocks(), expected) << "conversation " << i;
    }
}

TEST_F(kv_tiers, corrupted_disk_blocks_are_dropped_counted_and_never_served) {
    run_result first;
    std::vector<llama_token> a;
    {
        auto e = start({.disk = true, .cached_sequences = 1});
        ASSERT_TRUE(e);
        a = tokens(*e, prompt_a);
        first = run(*e, a);
        e->kv()->drain_io();
    }
    int flipped = 0;
    for (const auto & f : fs::directory_iterator(disk_dir)) {
        std::fstream io(f.path(), std::ios::in | std::ios::out | std::ios::binary);
        io.seekg(300);
        char c;
        io.get(c);
        io.seekp(300);
        io.put(static_cast<char>(c ^ 0x01));
        ++flipped;
    }
    ASSERT_GT(flipped, 0);
    auto e = start({.disk = true});
    ASSERT_TRUE(e);
    auto r = run(*e, a);
    EXPECT_EQ(r.tokens, first.tokens) << "corrupt blocks are recomputed, not served";
    EXPECT_EQ(e->kv_stats().prompt_tokens.disk, 0u);
    EXPECT_GE(e->kv()->corrupt_blocks(), 1u);
}

TEST_F(kv_tiers, different_cache_salts_never_share_a_block) {
    auto e = start({.host_budget = 64u << 20, .cached_sequences = 1});
    ASSERT_TRUE(e);
    auto a = tokens(*e, prompt_a);
    run(*e, a, 8, "alice");
    auto other = run(*e, a, 8, "mallory");
    EXPECT_EQ(other.done.usage.cached_tokens, 0) << "another salt must not reuse alice's context cells";
    run(*e, tokens(*e, prompt_b), 8, "alice");  // evict to host
    run(*e, tokens(*e, prompt_b), 8, "zed");
    ASSERT_TRUE(poll_until([&] { return e->kv()->host_blocks() > 0; }));
    auto other2 = run(*e, a, 8, "mallory2");
    EXPECT_EQ(other2.done.usage.cached_tokens, 0) << "nor alice's host blocks";
    auto same = run(*e, a, 8, "alice");
    EXPECT_GE(same.done.usage.cached_tokens, all_but_last(a.size()));
}

// 16 conversations whose KV adds up to more than 8x the context's cell pool, served in round-robin
// turns: none fails, and each resumed turn recomputes at most its new tokens plus one.
TEST_F(kv_tiers, conversations_far_beyond_the_cell_pool_are_served_in_turns) {
    auto e = start({.host_budget = 256u << 20, .cached_sequences = 2}, 512);
    ASSERT_TRUE(e);
    const int pool = e->n_ctx();
    std::vector<std::vector<llama_token>> convo(16);
    for (int c = 0; c < 16; ++c) {
        std::string text = "Conversation " + std::to_string(c) + ":";
        for (int w = 0; w < 60; ++w) text += " item" + std::to_string(c * 100 + w);
        convo[c] = tokens(*e, text);
    }
    size_t total_kv = 0;
    for (int turn = 0; turn < 3; ++turn) {
        for (int c = 0; c < 16; ++c) {
            std::vector<llama_token> fresh;
            if (turn > 0) {
                fresh = e->model().tokenize(" then turn " + std::to_string(turn) + " for " + std::to_string(c) + " continues", false, false);
                convo[c].insert(convo[c].end(), fresh.begin(), fresh.end());
            }
            auto r = run(*e, convo[c], 16);
            ASSERT_EQ(r.done.kind, engine::generation_event::type::done) << "conversation " << c << " turn " << turn << ": " << r.done.error.message;
            if (turn > 0) {
                int recomputed = r.done.usage.prompt_tokens - r.done.usage.cached_tokens;
                EXPECT_LE(recomputed, static_cast<int>(fresh.size()) + 1) << "conversation " << c << " turn " << turn;
            }
            convo[c].insert(convo[c].end(), r.tokens.begin(), r.tokens.end());
        }
    }
    for (const auto & c : convo) total_kv += c.size();
    EXPECT_GE(total_kv, static_cast<size_t>(8 * pool)) << "the working set must exceed the cell pool 8x";
    EXPECT_LE(e->kv()->host_bytes(), e->kv()->options().host_budget);
}

// 16 conversations sharing a long system prompt hold its blocks once in the host tier.
TEST_F(kv_tiers, a_shared_system_prompt_is_stored_once) {
    auto e = start({.host_budget = 256u << 20, .cached_sequences = 1});
    ASSERT_TRUE(e);
    std::string system = "System: you are a careful assistant.";
    for (int w = 0; w < 50; ++w) system += " rule" + std::to_string(w);
    auto shared = tokens(*e, system);
    const size_t shared_tokens = shared.size() / 16 * 16;  // the whole blocks conversations can share
    auto conversation = [&](int c) {
        auto p = shared;
        auto tail = e->model().tokenize(" user " + std::to_string(c) + " asks question " + std::to_string(c * 7), false, false);
        p.insert(p.end(), tail.begin(), tail.end());
        auto r = run(*e, p, 8);
        return p.size() + r.tokens.size() - 1;  // tokens in the context (the last one was never decoded)
    };
    auto evicted = [&](uint64_t n) { return poll_until([&] { return e->kv_stats().evictions.context >= n; }); };

    // Bytes per token, measured on the first conversation alone.
    size_t first = conversation(0);
    auto b = tokens(*e, prompt_b);
    run(*e, b, 2);
    ASSERT_TRUE(evicted(1));
    const double per_token = static_cast<double>(e->kv()->host_bytes()) / static_cast<double>(first);

    size_t unique_tokens = first - shared_tokens;
    for (int c = 1; c < 16; ++c) unique_tokens += conversation(c) - shared_tokens;
    run(*e, b, 2);  // push the last conversation out as well
    ASSERT_TRUE(evicted(17));
    const size_t b_tokens = b.size() + 1;
    const double ideal = per_token * static_cast<double>(shared_tokens + unique_tokens + b_tokens);
    const double duplicated = per_token * static_cast<double>(16 * shared_tokens + unique_tokens + b_tokens);
    const double held = static_cast<double>(e->kv()->host_bytes());
    EXPECT_LE(held, 1.1 * ideal) << "shared prompt blocks must be stored once";
    EXPECT_LT(held, 0.5 * duplicated) << "per-conversation copies would need " << duplicated << " bytes";
}

// llama.cpp attends over every used cell of the unified cache, other sequences' included: with host RAM
// to keep it, an idle conversation leaves the context once another one runs, whatever
// --kv-cached-sequences allows, and its next turn is served from host RAM with the same output.
TEST_F(kv_tiers, an_idle_conversation_makes_way_for_another_and_comes_back_from_host_ram) {
    auto e = start({.host_budget = 64u << 20, .cached_sequences = 8});
    ASSERT_TRUE(e);
    auto a = tokens(*e, prompt_a), b = tokens(*e, prompt_b);
    auto first = run(*e, a);
    EXPECT_TRUE(poll_until([&] { return e->stats().kv_cells_cached > 0; })) << "alone, A stays in the context";
    run(*e, b);
    EXPECT_EQ(e->kv_stats().evictions.context, 1u) << "B ran: A's cells left the context";
    EXPECT_GT(e->kv()->host_bytes(), 0u);
    auto again = run(*e, a);
    EXPECT_SAME_OUTPUT(again.tokens, first.tokens);
    EXPECT_EQ(again.done.usage.cached_tokens, all_but_last(a.size()));
    EXPECT_EQ(e->kv_stats().prompt_tokens.host, static_cast<uint64_t>(all_but_last(a.size())));
}

// A block goes to host RAM as soon as it is full, while its sequence still runs: a later demotion or
// swap-out then copies only the last partial block, not the whole conversation on another
// request's path.
TEST_F(kv_tiers, a_running_sequence_stores_each_block_once_it_is_full) {
    auto e = start({.host_budget = 64u << 20, .cached_sequences = 8});
    ASSERT_TRUE(e);
    auto a = tokens(*e, prompt_a);
    auto r = req(a, 200);
    r.sampling.ignore_eos = true;
    auto ch = submit_ok(*e, r);
    int received = 0;
    while (received < 20) {
        auto ev = ch->pop(std::chrono::seconds(30));
        ASSERT_TRUE(ev) << "no token within 30 s";
        ASSERT_EQ(ev->kind, engine::generation_event::type::text);
        ++received;
    }
    // The 20th token's event left after the step that computed the 19th; the step before it (n_past =
    // prompt + 18) had stored its full blocks by then.
    const size_t full = (a.size() + 18) / 16;
    EXPECT_GE(e->kv()->host_blocks(), full) << "nothing else ran: no demotion put them there";
    EXPECT_EQ(e->kv_stats().evictions.context, 0u);
    auto rest = collect(*ch);
    EXPECT_EQ(rest.done.kind, engine::generation_event::type::done);
}

void kv_tiers::expect_idle_conversation_stays(size_t host_budget) {
    auto e = start({.host_budget = host_budget, .cached_sequences = 8});
    ASSERT_TRUE(e);
    auto a = tokens(*e, prompt_a);
    run(*e, a);
    run(*e, tokens(*e, prompt_b));
    EXPECT_EQ(e->kv_stats().evictions.context, 0u);
    EXPECT_EQ(run(*e, a).done.usage.cached_tokens, all_but_last(a.size())) << "from the context";
}

// Without a tier below, the context is the only cache: idle conversations stay.
TEST_F(kv_tiers, without_a_tier_below_idle_conversations_stay_in_the_context) { expect_idle_conversation_stays(0); }

// Host RAM too small to hold a conversation comfortably, and no disk: demoting it would only lose its
// tail, so it stays in the context.
TEST_F(kv_tiers, an_idle_conversation_too_large_for_host_ram_stays_in_the_context) { expect_idle_conversation_stays(4096); }
