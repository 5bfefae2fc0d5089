// generation_session and run_embeddings driven through a real model manager with the generated
// models (no HTTP): the events a route sees, n > 1 interleaving, a client that leaves, the checks
// that need the model, a stream whose output is not UTF-8, and embedding batches beyond the queue.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>

#include "http/api_error.h"
#include "api/embedding_batch.h"
#include "api/generation_session.h"
#include "http/stream_writer.h"
#include "support/model_dir.h"
#include "support/poll.h"

using namespace rc;
using namespace rc::api;
using namespace rc::http;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

class session_test : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        dir_ = std::make_unique<test::model_dir>(std::vector<std::pair<std::string, std::string>>{{"demo", "tiny-chat"}, {"embed", "tiny-embed"}});
        engine::engine_options eo;
        eo.n_ctx = 8192;
        eo.n_parallel = 4;
        eo.n_threads = 1;
        eo.max_queue = 8;  // small, so that embedding batches must wait for room
        manager_ = std::make_unique<models::model_manager>(models::local_catalog(dir_->path()), eo, llama::model_load_options{});
        ctx_ = std::make_unique<api_context>(api_context{*manager_, api_options{}});
    }
    static void TearDownTestSuite() {
        ctx_.reset();
        manager_.reset();
        dir_.reset();
    }

    static api_context & ctx() { return *ctx_; }

    static generation_input chat(const std::string & text, int max_tokens) {
        generation_input in;
        in.model = "demo";
        in.task = "chat";
        in.prompt_field = "messages";
        engine::chat_input c;
        common_chat_msg m;
        m.role = "user";
        m.content = text;
        c.messages.push_back(m);
        in.chat = c;
        in.params.max_tokens = max_tokens;
        in.params.sampling.temperature = 0;
        return in;
    }
    // Bans every end-of-generation token: the reply runs to max_tokens.
    static void no_end(generation_input & in) {
        auto m = test::shared_model("tiny-chat");
        for (llama_token t = 0; t < m->info().n_vocab; ++t) {
            if (m->is_eog(t)) in.params.sampling.logit_bias.emplace_back(t, -INFINITY);
        }
    }
    static std::shared_ptr<generation_session> start(generation_input in) {
        const auto entry = find_model_entry(ctx(), in.model);
        return generation_session::start(ctx(), entry, std::move(in));
    }
    // The 400's field, or "" when `f` throws none.
    template <typename F>
    static std::string bad_field(F && f) {
        try {
            f();
        } catch (const api_error & e) {
            EXPECT_EQ(e.status, 400) << e.what();
            return e.param;
        }
        return "";
    }

    static inline std::unique_ptr<test::model_dir> dir_;
    static inline std::unique_ptr<models::model_manager> manager_;
    static inline std::unique_ptr<api_context> ctx_;
};

}  // namespace

TEST_F(session_test, a_chat_yields_deltas_then_one_done_with_the_whole_message) {
    auto in = chat("Hello there", 6);
    no_end(in);
    in.stream = true;
    auto s = start(std::move(in));
    std::string streamed;
    int dones = 0;
    const common_chat_msg * msg = nullptr;
    ASSERT_TRUE(s->run({}, [&](const session_event & ev) {
        if (ev.kind == session_event::type::delta) {
            EXPECT_EQ(dones, 0) << "no delta after the done";
            streamed += ev.delta.content;
        } else if (ev.kind == session_event::type::done) {
            ++dones;
            msg = ev.message;
            EXPECT_EQ(ev.finish, engine::finish_reason::length);
            EXPECT_EQ(ev.usage.completion_tokens, 6);
            EXPECT_GT(ev.usage.prompt_tokens, 5);
        }
        return ev.kind != session_event::type::error;
    }));
    EXPECT_EQ(dones, 1);
    ASSERT_TRUE(msg);
    EXPECT_EQ(msg->content, streamed);
    EXPECT_FALSE(streamed.empty());
}

TEST_F(session_test, n_choices_stream_interleaved) {
    auto in = chat("Tell me a story", 24);
    no_end(in);
    in.stream = true;
    in.n = 3;
    in.params.sampling.temperature = 1.0f;
    in.params.sampling.seed = 11;
    auto s = start(std::move(in));
    ASSERT_EQ(s->choices(), 3u);
    std::vector<int> deltas(3, 0);
    std::vector<bool> done(3, false);
    bool interleaved = false;  // a later choice's token arrived before choice 0 ended
    ASSERT_TRUE(s->run({}, [&](const session_event & ev) {
        if (ev.kind == session_event::type::delta && !ev.tokens.empty()) {
            ++deltas[ev.choice];
            if (ev.choice > 0 && !done[0]) interleaved = true;
        }
        if (ev.kind == session_event::type::done) {
            EXPECT_FALSE(done[ev.choice]) << "one done per choice";
            done[ev.choice] = true;
        }
        return true;
    }));
    for (int i = 0; i < 3; ++i) {
        EXPECT_TRUE(done[i]) << i;
        EXPECT_EQ(deltas[i], 24) << "every token of choice " << i;
    }
    EXPECT_TRUE(interleaved) << "choices stream side by side, not one after the other";
}

TEST_F(session_test, a_client_that_leaves_is_noticed_within_a_second_streamed_or_not) {
    for (bool stream : {true, false}) {
        auto in = chat("Go on forever", 7000);
        no_end(in);
        in.stream = stream;
        auto s = start(std::move(in));
        std::atomic<bool> gone{false};
        clock_type::time_point left{};
        int tokens = 0;
        bool finished = s->run([&] { return !gone.load(); }, [&](const session_event & ev) {
            // Tokens keep coming all the time: the check must not wait for a quiet channel.
            if (ev.kind == session_event::type::delta && ++tokens == 20) {
                left = clock_type::now();
                gone = true;
            }
            return true;
        });
        EXPECT_FALSE(finished) << "stream=" << stream;
        ASSERT_GE(tokens, 20);
        EXPECT_LT(clock_type::now() - left, 1s) << "stream=" << stream << ": noticed after " << tokens << " tokens";
    }
    auto lease = manager_->acquire("demo");
    ASSERT_TRUE(lease.ok());
    EXPECT_TRUE(test::poll_until([&] { return lease->engine().stats().running == 0; }, 10s)) << "the cancelled sequences are freed";
}

TEST_F(session_test, checks_that_need_the_model_name_the_clients_field) {
    auto m = test::shared_model("tiny-chat");
    const int n_vocab = m->info().n_vocab;
    EXPECT_EQ(bad_field([&] {
                  generation_input in;
                  in.model = "demo";
                  in.prompts.push_back(prompt_input::of_tokens({1, n_vocab}));
                  start(std::move(in));
              }),
              "prompt");
    EXPECT_EQ(bad_field([&] {
                  auto in = chat("x", 2);
                  in.params.sampling.logit_bias.emplace_back(n_vocab + 5, 1.0f);
                  start(std::move(in));
              }),
              "logit_bias");
    EXPECT_EQ(bad_field([&] {
                  generation_input in;
                  in.model = "demo";
                  in.context = {n_vocab};
                  in.prompts.push_back(prompt_input::of_text("x"));
                  start(std::move(in));
              }),
              "context");
    EXPECT_EQ(bad_field([&] {
                  auto in = chat("x", 2);
                  in.model = "embed";
                  start(std::move(in));
              }),
              "model");
    EXPECT_EQ(bad_field([&] {
                  auto in = chat("x", 2);
                  in.think = true;  // tiny-chat's template cannot think
                  start(std::move(in));
              }),
              "think");
    EXPECT_EQ(bad_field([&] {
                  generation_input in;
                  in.model = "demo";
                  in.prompts.push_back(prompt_input::of_text("x"));
                  in.output_schema = "{\"type\": 5}";
                  in.schema_field = "format";
                  start(std::move(in));
              }),
              "format");
}

TEST_F(session_test, output_that_is_not_utf8_keeps_streaming) {
    // Force a token whose piece is a lone UTF-8 continuation byte, then let the model go on.
    auto m = test::shared_model("tiny-chat");
    llama_token bad = -1;
    for (llama_token t = 0; t < m->info().n_vocab && bad < 0; ++t) {
        if (m->token_to_piece(t) == "\x80") bad = t;
    }
    ASSERT_GE(bad, 0) << "the byte-level vocabulary has a token for every byte";
    auto in = chat("Hi", 40);
    no_end(in);
    in.stream = true;
    in.params.sampling.logit_bias.emplace_back(bad, 100.0f);  // nearly every token is that byte
    auto s = start(std::move(in));
    int tokens = 0, shown = 0;
    ASSERT_TRUE(s->run({}, [&](const session_event & ev) {
        if (ev.kind == session_event::type::delta && !ev.tokens.empty()) {
            ++tokens;
            if (!ev.delta.content.empty()) ++shown;
        }
        return true;
    }));
    EXPECT_EQ(tokens, 40);
    EXPECT_GE(shown, 35) << "each token shows as it comes, not all at the end";
}

TEST_F(session_test, embeddings_beyond_the_queue_are_batched_not_refused) {
    // The engine's queue takes 8 here; 40 inputs used to be refused with 503 at the ninth.
    auto lease = lease_model(ctx(), find_model_entry(ctx(), "embed"));
    embedding_input in;
    for (int i = 0; i < 40; ++i) in.inputs.push_back(prompt_input::of_text("input number " + std::to_string(i)));
    auto out = run_embeddings(ctx(), lease, std::move(in), {});
    ASSERT_EQ(out.vectors.size(), 40u);
    for (const auto & v : out.vectors) EXPECT_EQ(v.size(), 128u);
    EXPECT_NE(out.vectors[0], out.vectors[39]);
    EXPECT_GT(out.prompt_tokens, 40);

    embedding_input empty;
    empty.inputs.push_back(prompt_input::of_text("fine"));
    empty.inputs.push_back(prompt_input::of_text(""));
    EXPECT_EQ(bad_field([&] { run_embeddings(ctx(), lease, std::move(empty), {}); }), "input") << "[\"\"] is refused";
}

TEST(stream_writer, keeps_a_quiet_stream_alive) {
    std::string written;
    stream_sink sink;
    sink.write = [&](std::string_view c) {
        written.append(c);
        return true;
    };
    sink.alive = [] { return true; };
    stream_writer w(sink, [] { return std::string(": keep-alive\n\n"); }, 50ms);
    ASSERT_TRUE(w.write("data: 1\n\n"));
    ASSERT_TRUE(w.idle());
    EXPECT_EQ(written, "data: 1\n\n") << "not yet quiet long enough";
    EXPECT_TRUE(test::poll_until([&] {
        w.idle();
        return written.find(": keep-alive") != std::string::npos;
    }, 5s));
}
