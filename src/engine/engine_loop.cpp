// The engine thread: drain submissions, then step until idle. See engine.h for the contract.
#include <algorithm>
#include <cmath>

#include "engine/engine_impl.h"
#include "engine/logprobs.h"
#include "engine/scheduler.h"
#include "util/log.h"

namespace rc::engine {

namespace {

double ms_between(steady::time_point a, steady::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

void send_error(request_channel & ch, errc code, const std::string & message) {
    generation_event ev;
    ev.kind = generation_event::type::error;
    ev.error_code = errc_name(code);
    ev.error_message = message;
    ch.push(std::move(ev));
}

}  // namespace

void engine::run() {
    auto & im = *impl_;
    for (;;) {
        {
            std::unique_lock lock(mutex_);
            bool busy = std::any_of(im.active.begin(), im.active.end(), [](const auto & s) { return s->live(); });
            if (!busy && im.waiting.empty()) {
                if (im.promoting.empty()) {
                    wake_.wait(lock, [&] { return stopping_ || !incoming_.empty() || !prefetches_.empty() || !lookups_.empty(); });
                } else {
                    // Only disk promotions in flight: look again shortly (they complete on the I/O pool).
                    wake_.wait_for(lock, std::chrono::milliseconds(1), [&] { return stopping_ || !incoming_.empty() || !prefetches_.empty() || !lookups_.empty(); });
                }
            }
            if (stopping_) break;
            while (!prefetches_.empty()) {
                im.prefetch(prefetches_.front().first, prefetches_.front().second);
                prefetches_.pop_front();
            }
            while (!lookups_.empty()) {
                lookups_.front()->answer.set_value(im.answer_lookup(lookups_.front()->tokens, lookups_.front()->cache_salt));
                lookups_.pop_front();
            }
            while (!incoming_.empty()) {
                im.waiting.push_back(std::move(incoming_.front()));
                incoming_.pop_front();
            }
            im.queued.store(static_cast<int>(im.waiting.size()));
        }
        im.step();
    }
    std::lock_guard lock(mutex_);
    while (!incoming_.empty()) {
        im.waiting.push_back(std::move(incoming_.front()));
        incoming_.pop_front();
    }
    im.fail_all("the model was unloaded while the request was running");
}

bool engine::impl::step() {
    drop_cancelled();
    poll_promotions();
    admit();
    publish_gauges();  // before this step's tokens reach clients, so a scrape after a token sees it running
    bool did = model->info().is_embedding ? decode_embed() : decode_generate();
    remove_finished();
    publish_gauges();
    return did;
}

void engine::impl::drop_cancelled() {
    for (auto it = waiting.begin(); it != waiting.end();) {
        if (it->second->cancelled()) {
            generation_event ev;
            ev.kind = generation_event::type::done;
            ev.finish = finish_reason::cancelled;
            it->second->push(std::move(ev));
            ++cancelled;
            it = waiting.erase(it);
        } else {
            ++it;
        }
    }
    for (auto & s : active) {
        if (s->live() && s->channel->cancelled()) finish(*s, finish_reason::cancelled);
    }
}

void engine::impl::admit() {
    auto running_now = [&] {
        int n = static_cast<int>(promoting.size());
        for (const auto & s : active) n += s->live() ? 1 : 0;
        return n;
    };
    while (!waiting.empty() && running_now() < opts.n_parallel) {
        if (free_ids.empty() && !evict_lru_idle()) break;
        auto [req, ch] = std::move(waiting.front());
        waiting.pop_front();
        auto s = std::make_unique<sequence>();
        s->submitted = steady::now();
        if (req.kind == request_kind::generate) {
            auto smp = make_sampler(*model, req.sampling, req.grammar);
            if (!smp) {
                send_error(*ch, smp.err().code, smp.err().message);
                ++failed;
                continue;
            }
            s->sampler = std::move(smp.value());
        }
        s->id = free_ids.back();
        free_ids.pop_back();
        s->tokens = req.prompt;
        s->n_prompt = static_cast<int>(req.prompt.size());
        s->stops = stop_matcher(req.stop);
        s->req = std::move(req);
        s->channel = std::move(ch);
        s->admitted = steady::now();
        if (s->req.kind == request_kind::generate) {
            admit_with_reuse(std::move(s));
        } else {
            active.push_back(std::move(s));
        }
    }
}

bool engine::impl::decode_generate() {
    std::vector<schedule_input> in;
    in.reserve(active.size());
    for (const auto & s : active) in.push_back({s->live() && s->decoding, s->live() ? s->prompt_remaining() : 0});
    int budget = prefill_budget_for(prefill_speed, opts.prefill_step_ms, opts.prefill_chunk);
    auto plan = plan_step(in, {batch->capacity(), budget});
    if (plan.empty()) return false;

    batch->clear();
    int prefill_tokens = 0;
    for (const auto & e : plan) {
        auto & s = *active[e.index];
        s.logits_row = -1;
        if (s.decoding) {
            s.logits_row = batch->add(s.tokens.back(), s.n_past, s.id, true);
            continue;
        }
        for (int k = 0; k < e.n_tokens; ++k) {
            int pos = s.n_past + k;
            bool last = pos == s.n_prompt - 1;
            int row = batch->add(s.tokens[pos], pos, s.id, last);
            if (last) s.logits_row = row;
        }
        prefill_tokens += e.n_tokens;
    }

    auto decode_started = steady::now();
    int ret = llama_decode(ctx, batch->get());
    if (ret == 1) {
        // No free KV cells; llama.cpp restored the memory. Idle conversations give way first (their
        // blocks move to the tiers below); with none left, the youngest running sequence gives way so
        // the others can finish.
        if (evict_lru_idle()) return true;
        auto youngest = std::find_if(active.rbegin(), active.rend(), [](const auto & s) { return s->live(); });
        auto & victim = **youngest;
        fail(victim, errc::context_overflow,
             "the KV cache is full: all " + std::to_string(n_ctx) +
                 " cells are in use by running requests; retry later or raise --ctx-size");
        return true;
    }
    if (ret != 0) {
        rc::log::error("engine", "decode_failed", {{"ret", ret}, {"tokens", batch->size()}});
        for (const auto & e : plan) fail(*active[e.index], errc::internal, "llama_decode failed (" + std::to_string(ret) + ")");
        return true;
    }
    for (const auto & e : plan) active[e.index]->n_past += e.n_tokens;
    prefill_speed.observe(prefill_tokens, batch->size() - prefill_tokens,
                          std::chrono::duration<double>(steady::now() - decode_started).count());
    prompt_tokens += static_cast<uint64_t>(prefill_tokens);
    if (kv) kv->stats().add_tokens(kv::source::computed, static_cast<uint64_t>(prefill_tokens));
    sample_outputs();
    return true;
}

void engine::impl::sample_outputs() {
    for (auto & sp : active) {
        auto & s = *sp;
        if (!s.live() || s.logits_row < 0) continue;
        if (!s.decoding) {
            s.decoding = true;
            s.first_token = steady::now();
            // A recurrent state exists only for the last decoded token: snapshot the prompt's end now,
            // so a resume that diverges where the reply began can start from it.
            if (whole_snapshots && kv) save_snapshot(s, s.n_past);
        }
        llama_token tok = common_sampler_sample(s.sampler.get(), ctx, s.logits_row);
        common_sampler_accept(s.sampler.get(), tok, true);
        ++s.n_generated;
        ++generated_tokens;

        if (model->is_eog(tok) && !s.req.sampling.ignore_eos) {
            finish(s, finish_reason::stop);
            continue;
        }
        generation_event ev;
        if (s.req.logprobs_top >= 0) {
            ev.tokens.push_back(compute_logprobs(*model, llama_get_logits_ith(ctx, s.logits_row), tok, s.req.logprobs_top));
        } else {
            ev.tokens.push_back({token_logprob{tok, {}, 0.0f}, {}});
        }
        auto st = s.stops.feed(model->token_to_piece(tok));
        ev.text = std::move(st.visible);
        s.channel->push(std::move(ev));
        if (st.stopped) {
            finish(s, finish_reason::stop, st.stop_word);
            continue;
        }
        s.tokens.push_back(tok);
        if (s.req.max_tokens >= 0 && s.n_generated >= s.req.max_tokens) {
            finish(s, finish_reason::length);
        } else if (static_cast<int>(s.tokens.size()) >= n_ctx) {
            finish(s, finish_reason::length);  // the next token would have no position left
        }
    }
}

bool engine::impl::decode_embed() {
    batch->clear();
    std::vector<sequence *> in_batch;
    for (auto & sp : active) {
        auto & s = *sp;
        if (s.done) continue;
        if (batch->size() + s.n_prompt > batch->capacity()) {
            if (in_batch.empty()) fail(s, errc::context_overflow, "input is longer than the context");
            continue;
        }
        for (int pos = 0; pos < s.n_prompt; ++pos) batch->add(s.tokens[pos], pos, s.id, true);
        in_batch.push_back(&s);
    }
    if (in_batch.empty()) return false;
    int ret = llama_decode(ctx, batch->get());
    for (auto * s : in_batch) {
        const float * emb = ret == 0 ? llama_get_embeddings_seq(ctx, s->id) : nullptr;
        if (!emb) {
            fail(*s, errc::internal, "embedding computation failed (llama_decode " + std::to_string(ret) + ")");
            continue;
        }
        generation_event ev;
        ev.kind = generation_event::type::embedding;
        const int n = model->info().n_embd_out > 0 ? model->info().n_embd_out : model->info().n_embd;
        ev.embedding.assign(emb, emb + n);
        if (s->req.normalize_embedding) {
            double norm = 0;
            for (float v : ev.embedding) norm += static_cast<double>(v) * v;
            norm = std::sqrt(norm);
            if (norm > 0) {
                for (float & v : ev.embedding) v = static_cast<float>(v / norm);
            }
        }
        ev.usage.prompt_tokens = s->n_prompt;
        ev.usage.queue_ms = ms_between(s->submitted, s->admitted);
        ev.usage.prompt_ms = ms_between(s->admitted, steady::now());
        prompt_tokens += static_cast<uint64_t>(s->n_prompt);
        s->channel->push(std::move(ev));
        ++finished;
        release(*s);
    }
    return true;
}

void engine::impl::finish(sequence & s, finish_reason reason, const std::string & stop_word) {
    if (s.done) return;
    if (std::string rest = s.stops.flush(); !rest.empty()) {
        generation_event tail;
        tail.text = std::move(rest);
        s.channel->push(std::move(tail));
    }
    auto now = steady::now();
    generation_event ev;
    ev.kind = generation_event::type::done;
    ev.finish = reason;
    ev.stop_word = stop_word;
    ev.usage.prompt_tokens = s.n_prompt;
    ev.usage.completion_tokens = s.n_generated;
    ev.usage.cached_tokens = s.n_reused;
    ev.usage.queue_ms = ms_between(s.submitted, s.admitted);
    bool started = s.first_token != steady::time_point{};
    ev.usage.prompt_ms = ms_between(s.admitted, started ? s.first_token : now);
    ev.usage.generation_ms = started ? ms_between(s.first_token, now) : 0.0;
    s.channel->push(std::move(ev));
    if (reason == finish_reason::cancelled) ++cancelled;
    else ++finished;
    // A finished conversation stays in the context for reuse (or, with no room for idle ones, goes
    // straight to the tiers below); a cancelled one frees its cells now.
    if ((max_idle > 0 || kv) && s.req.kind == request_kind::generate && reason != finish_reason::cancelled) {
        retire(s);
    } else {
        release(s);
    }
}

void engine::impl::fail(sequence & s, errc code, const std::string & message) {
    if (s.done || s.idle) return;
    send_error(*s.channel, code, message);
    ++failed;
    release(s);
}

void engine::impl::release(sequence & s) {
    if (mem) llama_memory_seq_rm(mem, s.id, -1, -1);
    free_ids.push_back(s.id);
    s.done = true;
}

void engine::impl::remove_finished() {
    std::erase_if(active, [](const std::unique_ptr<sequence> & s) { return s->done; });
}

void engine::impl::fail_all(const std::string & message) {
    for (auto & [req, ch] : waiting) send_error(*ch, errc::unavailable, message);
    waiting.clear();
    for (auto & p : promoting) {
        send_error(*p.seq->channel, errc::unavailable, message);
        active.push_back(std::move(p.seq));  // released below with the others
    }
    promoting.clear();
    for (auto & s : active) {
        if (s->idle) release(*s);
        else fail(*s, errc::unavailable, message);
    }
    remove_finished();
    publish_gauges();
}

void engine::impl::publish_gauges() {
    int cells = 0, cached = 0, live = 0, idle = 0;
    for (const auto & s : active) {
        if (s->done) continue;
        if (s->idle) {
            cached += s->n_past;
            ++idle;
        } else {
            cells += s->n_past;
            ++live;
        }
    }
    cells_used.store(cells);
    cells_cached.store(cached);
    idle_count.store(idle);
    running.store(live + static_cast<int>(promoting.size()));
    queued.store(static_cast<int>(waiting.size()));
}

}  // namespace rc::engine
