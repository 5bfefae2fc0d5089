// Whole-sequence snapshots for a recurrent model (tiny-mamba, ARCHITECTURE.md §5): its state is not
// per-token KV, so the tiers hold the state after exactly N tokens. Greedy output after restoring
// a snapshot from host RAM, from disk and after a restart must equal a run that recomputed. States are
// kept at checkpoints: message boundaries, every few blocks, one token before a prompt's end.
#include <filesystem>

#include "engine_fixture.h"
#include "support/temp_dir.h"

using namespace rc;
using namespace rc::test;
namespace fs = std::filesystem;

namespace {

class kv_snapshots : public ::testing::Test {
  protected:
    std::unique_ptr<engine::engine> start(size_t host_budget, bool disk, int checkpoint_blocks = 8) {
        engine::engine_options o;
        o.kv.checkpoint_blocks = checkpoint_blocks;
        o.n_ctx = 2048;
        o.n_parallel = 2;
        o.kv.block_size = 16;
        o.kv.host_budget = host_budget;
        if (disk) {
            o.kv.disk_dir = disk_dir;
            o.kv.disk_budget = 64u << 20;
        }
        return start_engine("tiny-mamba", o);
    }
    static run_result run(engine::engine & e, const std::vector<llama_token> & prompt, int max_tokens = 12, std::vector<int> boundaries = {}) {
        engine::generation_request r;
        r.prompt = prompt;
        r.message_boundaries = std::move(boundaries);
        r.sampling.temperature = 0;
        r.max_tokens = max_tokens;
        auto out = collect(*submit_ok(e, r));
        EXPECT_EQ(out.done.kind, engine::generation_event::type::done) << out.done.error.message;
        return out;
    }
    std::vector<llama_token> tokens(engine::engine & e, const std::string & text) { return e.model().tokenize(text, true, false); }

    temp_dir tmp_{"snap"};  // fresh for each test, removed after it
    const fs::path disk_dir = tmp_.path();
};

const char * prompt_a = "Alice asked about the history of the printing press and how it changed Europe in the fifteenth century";
const char * prompt_b = "Bob wants a recipe for sourdough bread with a long cold fermentation and a crispy crust please";

}  // namespace

TEST_F(kv_snapshots, the_model_is_recurrent_and_uses_snapshots) {
    auto e = start(64u << 20, false);
    ASSERT_TRUE(e);
    EXPECT_TRUE(e->model().info().is_recurrent);
    ASSERT_NE(e->kv(), nullptr) << "recurrent models get the tiers too";
}

TEST_F(kv_snapshots, a_resumed_conversation_restores_its_snapshot_and_continues_identically) {
    auto e = start(64u << 20, false);
    ASSERT_TRUE(e);
    auto a = tokens(*e, prompt_a);
    auto turn1 = run(*e, a, 16);
    run(*e, tokens(*e, prompt_b));
    std::vector<llama_token> turn2 = a;
    turn2.insert(turn2.end(), turn1.tokens.begin(), turn1.tokens.end());  // what a client sends back
    auto more = e->model().tokenize(" and what about Gutenberg?", false, false);
    turn2.insert(turn2.end(), more.begin(), more.end());
    auto r = run(*e, turn2);
    EXPECT_LE(r.done.usage.prompt_tokens - r.done.usage.cached_tokens, static_cast<int>(more.size()) + 1);
    EXPECT_GT(e->kv_stats().prompt_tokens.host, 0u);

    auto fresh = start(0, false);
    ASSERT_TRUE(fresh);
    EXPECT_EQ(run(*fresh, turn2).tokens, r.tokens) << "restored state must give the output of recomputing";
}

TEST_F(kv_snapshots, a_resume_diverging_at_the_prompt_end_uses_the_prompt_snapshot) {
    auto e = start(64u << 20, false);
    ASSERT_TRUE(e);
    auto a = tokens(*e, prompt_a);
    run(*e, a, 16);
    std::vector<llama_token> edited = a;
    auto more = e->model().tokenize(" Actually, tell me about movable type.", false, false);
    edited.insert(edited.end(), more.begin(), more.end());
    auto r = run(*e, edited);
    // The state one token before the prompt's end is kept (it also serves a regenerate, below);
    // the prompt's last token is computed again, then the new turn.
    EXPECT_EQ(r.done.usage.cached_tokens, static_cast<int>(a.size()) - 1);

    auto fresh = start(0, false);
    ASSERT_TRUE(fresh);
    EXPECT_EQ(run(*fresh, edited).tokens, r.tokens);
}

// The reproduction: the identical prompt again, after another conversation, reused 0 of its
// tokens (the prompt snapshot was taken after the last prompt token, which is always decoded).
TEST_F(kv_snapshots, a_regenerate_resumes_from_the_state_before_the_last_prompt_token) {
    auto e = start(64u << 20, false);
    ASSERT_TRUE(e);
    auto a = tokens(*e, prompt_a);
    auto first = run(*e, a, 12);
    run(*e, tokens(*e, prompt_b));
    uint64_t host_before = e->kv_stats().prompt_tokens.host;
    auto again = run(*e, a, 12);
    EXPECT_EQ(again.done.usage.cached_tokens, static_cast<int>(a.size()) - 1);
    EXPECT_EQ(e->kv_stats().prompt_tokens.host - host_before, a.size() - 1);
    EXPECT_EQ(again.tokens, first.tokens);
}

TEST_F(kv_snapshots, snapshots_survive_a_restart_on_disk) {
    std::vector<llama_token> a, turn2;
    run_result turn1;
    {
        auto e = start(0, true);
        ASSERT_TRUE(e);
        a = tokens(*e, prompt_a);
        turn1 = run(*e, a, 16);
        turn2 = a;
        turn2.insert(turn2.end(), turn1.tokens.begin(), turn1.tokens.end());
        auto more = e->model().tokenize(" and then?", false, false);
        turn2.insert(turn2.end(), more.begin(), more.end());
        ASSERT_TRUE(poll_until([&] { return e->kv()->disk_blocks() >= 2; })) << "prompt-end and conversation-end snapshots written back";
    }
    auto e = start(0, true);
    ASSERT_TRUE(e);
    auto r = run(*e, turn2);
    EXPECT_GT(e->kv_stats().prompt_tokens.disk, 0u);
    EXPECT_GE(r.done.usage.cached_tokens, static_cast<int>(a.size()));

    auto fresh = start(0, false);
    ASSERT_TRUE(fresh);
    EXPECT_EQ(run(*fresh, turn2).tokens, r.tokens);
}

TEST_F(kv_snapshots, a_prompt_sharing_a_message_boundary_resumes_from_the_state_kept_there) {
    // Two conversations with one system prompt: the first keeps a state where the system prompt ends
    // (its message boundary), the second starts from it and computes only its own question.
    auto e = start(64u << 20, false, 0);
    ASSERT_TRUE(e);
    const auto system = tokens(*e, prompt_a);
    const int boundary = static_cast<int>(system.size());
    auto with = [&](const char * question) {
        auto t = system;
        auto q = e->model().tokenize(question, false, false);
        t.insert(t.end(), q.begin(), q.end());
        return t;
    };
    const auto first = with(" Then tell me about paper mills.");
    const auto second = with(" Which cities printed the most books?");
    run(*e, first, 4, {boundary});
    auto r = run(*e, second, 12, {boundary});
    EXPECT_EQ(r.done.usage.cached_tokens, boundary) << "the state at the end of the shared system prompt";

    auto fresh = start(0, false);
    ASSERT_TRUE(fresh);
    EXPECT_EQ(run(*fresh, second).tokens, r.tokens) << "resumed from a checkpoint, the output of recomputing";
}

TEST_F(kv_snapshots, a_long_prompt_keeps_a_state_every_few_blocks_so_an_edit_recomputes_at_most_those) {
    // Blocks of 16, a state every 2 blocks: an edit at token 45 of a long prompt resumes from token 32.
    auto e = start(64u << 20, false, 2);
    ASSERT_TRUE(e);
    auto long_prompt = tokens(*e, std::string(prompt_a) + " " + prompt_b + " " + prompt_a);
    ASSERT_GT(long_prompt.size(), 48u);
    run(*e, long_prompt, 4);
    auto edited = long_prompt;
    edited.resize(45);
    auto tail = e->model().tokenize(" and the bread of monks", false, false);
    edited.insert(edited.end(), tail.begin(), tail.end());
    auto r = run(*e, edited);
    EXPECT_EQ(r.done.usage.cached_tokens, 32) << "the last checkpoint before the edit (2 blocks of 16, twice)";

    auto none = start(64u << 20, false, 0);
    ASSERT_TRUE(none);
    run(*none, long_prompt, 4);
    EXPECT_EQ(run(*none, edited).done.usage.cached_tokens, 0) << "without checkpoints in the prompt, nothing before the edit";

    auto fresh = start(0, false);
    ASSERT_TRUE(fresh);
    EXPECT_EQ(run(*fresh, edited).tokens, r.tokens);
}
