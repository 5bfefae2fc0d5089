// generation_meter (src/api/generation_meter.h) fed synthetic engine events with chosen arrival
// times: what it records for TTFT, inter-token latency, tokens and finish reasons.
#include <gtest/gtest.h>

#include "api/generation_meter.h"

using rc::api::generation_meter;
using rc::api::server_metrics;
using namespace std::chrono_literals;
namespace engine = rc::engine;

namespace {

engine::generation_event token(const std::string & text) {
    engine::generation_event ev;
    ev.text = text;
    ev.tokens.push_back({engine::token_logprob{1, text, 0.0f}, {}});
    return ev;
}

engine::generation_event done(engine::finish_reason r, int prompt, int completion) {
    engine::generation_event ev;
    ev.kind = engine::generation_event::type::done;
    ev.finish = r;
    ev.usage.prompt_tokens = prompt;
    ev.usage.completion_tokens = completion;
    return ev;
}

uint64_t count(rc::metrics::histogram_family & f, const std::string & model) { return f.with({model}).collect().count; }
double sum(rc::metrics::histogram_family & f, const std::string & model) { return f.with({model}).collect().sum; }

}  // namespace

TEST(generation_meter, records_ttft_gaps_tokens_and_reason) {
    server_metrics m;
    auto t0 = generation_meter::clock::now();
    generation_meter meter(&m, "demo");
    meter.on_event(token("a"), t0 + 2s);
    meter.on_event(token("b"), t0 + 2s + 50ms);
    meter.on_event(token("c"), t0 + 2s + 150ms);
    engine::generation_event flush;  // held-back stop text flushed at the finish: no new token
    flush.text = "tail";
    meter.on_event(flush, t0 + 5s);
    meter.on_event(done(engine::finish_reason::length, 7, 3), t0 + 5s);

    EXPECT_EQ(count(m.time_to_first_token, "demo"), 1u);
    EXPECT_NEAR(sum(m.time_to_first_token, "demo"), 2.0, 0.05);
    EXPECT_EQ(count(m.inter_token_latency, "demo"), 2u);
    EXPECT_NEAR(sum(m.inter_token_latency, "demo"), 0.15, 1e-9);
    EXPECT_EQ(m.generated_tokens.with({"demo"}).value(), 3);
    EXPECT_EQ(m.prompt_tokens.with({"demo"}).value(), 7);
    EXPECT_EQ(m.requests_finished.with({"demo", "length"}).value(), 1);
}

TEST(generation_meter, an_end_of_generation_first_token_still_has_a_ttft) {
    server_metrics m;
    auto t0 = generation_meter::clock::now();
    generation_meter meter(&m, "demo");
    meter.on_event(done(engine::finish_reason::stop, 4, 1), t0 + 1s);
    EXPECT_EQ(count(m.time_to_first_token, "demo"), 1u);
    EXPECT_EQ(count(m.inter_token_latency, "demo"), 0u);
    EXPECT_EQ(m.requests_finished.with({"demo", "stop"}).value(), 1);
}

TEST(generation_meter, later_choices_count_tokens_but_not_latency) {
    server_metrics m;
    auto t0 = generation_meter::clock::now();
    generation_meter meter(&m, "demo");
    meter.on_event(token("a"), t0 + 1s);
    meter.on_event(token("b"), t0 + 1s + 10ms);
    meter.on_event(done(engine::finish_reason::stop, 5, 3), t0 + 2s);
    // Choice 2 was generated meanwhile; its events arrive in a burst.
    meter.on_event(token("x"), t0 + 2s);
    meter.on_event(token("y"), t0 + 2s);
    meter.on_event(done(engine::finish_reason::cancelled, 5, 2), t0 + 2s);
    EXPECT_EQ(count(m.time_to_first_token, "demo"), 1u);
    EXPECT_EQ(count(m.inter_token_latency, "demo"), 1u);
    EXPECT_EQ(m.generated_tokens.with({"demo"}).value(), 5);
    EXPECT_EQ(m.prompt_tokens.with({"demo"}).value(), 10);
    EXPECT_EQ(m.requests_finished.with({"demo", "stop"}).value(), 1);
    EXPECT_EQ(m.requests_finished.with({"demo", "cancelled"}).value(), 1);
}

TEST(generation_meter, errors_and_embeddings) {
    server_metrics m;
    generation_meter gen(&m, "demo");
    engine::generation_event err;
    err.kind = engine::generation_event::type::error;
    err.error = rc::make_error(rc::errc::context_overflow, "the prompt does not fit");
    gen.on_event(err);
    EXPECT_EQ(m.requests_finished.with({"demo", "error"}).value(), 1);
    EXPECT_EQ(m.generated_tokens.with({"demo"}).value(), 0);

    generation_meter emb(&m, "embed");
    engine::generation_event e;
    e.kind = engine::generation_event::type::embedding;
    e.usage.prompt_tokens = 9;
    emb.on_event(e);
    EXPECT_EQ(m.prompt_tokens.with({"embed"}).value(), 9);
    EXPECT_EQ(m.requests_finished.with({"embed", "stop"}).value(), 1);
    EXPECT_EQ(m.expose().find("rustycage_time_to_first_token_seconds_count{model=\"embed\"}"), std::string::npos)
        << "no empty latency series for a model that never produced a token";
}

TEST(generation_meter, without_metrics_every_event_is_a_no_op) {
    // Routes meter unconditionally; a server without a registry (tests, tools) passes null.
    generation_meter meter(nullptr, "demo");
    engine::generation_event err;
    err.kind = engine::generation_event::type::error;
    engine::generation_event emb;
    emb.kind = engine::generation_event::type::embedding;
    EXPECT_NO_THROW(meter.on_event(token("a")));
    EXPECT_NO_THROW(meter.on_event(token("b"), generation_meter::clock::now(), false));
    EXPECT_NO_THROW(meter.on_event(done(engine::finish_reason::stop, 1, 1)));
    EXPECT_NO_THROW(meter.on_event(err));
    EXPECT_NO_THROW(meter.on_event(emb));
}

TEST(generation_meter, requests_are_labelled_by_pattern_and_bounded_method) {
    server_metrics m;
    m.record_request("/v1/models/:id", "GET", 404, 0.01);
    m.record_request("", "BREW", 400, 0.02);
    std::string text = m.expose();
    EXPECT_NE(text.find("rustycage_requests_total{route=\"/v1/models/:id\",method=\"GET\",status=\"404\"} 1"), std::string::npos) << text;
    EXPECT_NE(text.find("rustycage_requests_total{route=\"unmatched\",method=\"other\",status=\"400\"} 1"), std::string::npos) << text;
    EXPECT_NE(text.find("rustycage_request_duration_seconds_count{route=\"unmatched\"} 1"), std::string::npos) << text;
}
