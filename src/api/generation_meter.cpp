#include "api/generation_meter.h"

namespace rc::api {

namespace {

double seconds(generation_meter::clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

generation_meter::generation_meter(server_metrics * m, const std::string & model) : m_(m), model_(model), submitted_(clock::now()) {}

// Series are created on first use: an embedding model never gets empty latency histograms.
void generation_meter::observe_ttft(clock::time_point now) {
    if (!ttft_) ttft_ = &m_->time_to_first_token.with({model_});
    ttft_->observe(seconds(now - submitted_));
}

void generation_meter::on_event(const engine::generation_event & ev, clock::time_point now, bool timed) {
    if (!m_) return;
    using type = engine::generation_event::type;
    timed = timed && !timing_done_;
    if (ev.kind == type::text) {
        // A text event without tokens is held-back stop-string text flushed at the finish: no new token.
        if (ev.tokens.empty() || !timed) return;
        if (!first_token_seen_) {
            observe_ttft(now);
        } else {
            if (!itl_) itl_ = &m_->inter_token_latency.with({model_});
            itl_->observe(seconds(now - last_token_));
        }
        first_token_seen_ = true;
        last_token_ = now;
        return;
    }
    const char * reason = "error";
    if (ev.kind == type::done || ev.kind == type::embedding) {
        // An end-of-generation token is counted but sends no text: it may be the first token.
        if (ev.kind == type::done && !first_token_seen_ && timed && ev.usage.completion_tokens > 0) observe_ttft(now);
        m_->prompt_tokens.with({model_}).inc(ev.usage.prompt_tokens);
        m_->generated_tokens.with({model_}).inc(ev.usage.completion_tokens);
        switch (ev.finish) {
            case engine::finish_reason::length: reason = "length"; break;
            case engine::finish_reason::cancelled: reason = "cancelled"; break;
            case engine::finish_reason::error: reason = "error"; break;
            default: reason = "stop"; break;  // stop, and an embedding that completed
        }
    }
    m_->requests_finished.with({model_, reason}).inc();
    if (timed) timing_done_ = true;
}

}  // namespace rc::api
