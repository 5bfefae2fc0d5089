// The engine thread: drain submissions, then step until nothing can move. See engine.h for the contract.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "engine/engine_impl.h"
#include "engine/logprobs.h"
#include "engine/scheduler.h"
#include "llama/compute_thread.h"
#include "util/log.h"

namespace rc::engine {

namespace {

// How long an engine waits with nothing to do before it hands back its compute pool.
constexpr auto idle_pool_release = std::chrono::milliseconds(200);

generation_event cancelled_event() {
    generation_event ev;
    ev.kind = generation_event::type::done;
    ev.finish = finish_reason::cancelled;
    return ev;
}

}  // namespace

void send_error(request_channel & ch, errc code, const std::string & message) {
    generation_event ev;
    ev.kind = generation_event::type::error;
    ev.error = make_error(code, message);
    ch.push(std::move(ev));
}

void engine::run(std::promise<void> & started) {
    auto & im = *impl_;
    if (!llama::lower_compute_priority(im.opts.compute_nice))
        rc::log::warn("engine", "compute_priority_unchanged", {{"nice", im.opts.compute_nice}, {"error", std::strerror(errno)}});
    // Here, not on the thread that started the engine: graphs run on engine threads only
    // (llama/compute_thread.h).
    if (im.plans()) {
        im.start_step_cost();  // first: a remembered cell size spares the warm-up's measurement
        im.warm_up();
    }
    started.set_value();
    bool progressed = false;
    for (;;) {
        {
            std::unique_lock lock(mutex_);
            // Nothing moved last time: sleep until a request, a hint, an I/O completion or the stop.
            // Idle for a moment, the compute pool goes back (llama/compute_thread.h): another engine's
            // decode must not pay for this one's parked threads.
            auto work = [&] { return stopping_ || !incoming_.empty() || !prefetches_.empty() || !lookups_.empty() || io_event_; };
            if (!progressed && !wake_.wait_for(lock, idle_pool_release, work)) {
                lock.unlock();
                llama::release_compute_threads();
                lock.lock();
                wake_.wait(lock, work);
            }
            io_event_ = false;
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
            im.queued_count.store(static_cast<int>(im.waiting.size() + im.queued.size()));
        }
        progressed = im.step();
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
    bool did = plans() && poll_promotions();
    did = admit() || did;
    publish_gauges();  // before this step's tokens reach clients, so a scrape after a token sees it running
    did = (model->info().is_embedding ? decode_embed() : decode_generate()) || did;
    remove_finished();
    announce_context();
    publish_gauges();
    return did;
}

void engine::impl::drop_cancelled() {
    for (auto it = waiting.begin(); it != waiting.end();) {
        if (it->second->cancelled()) {
            it->second->push(cancelled_event());
            ++cancelled;
            it = waiting.erase(it);
        } else {
            ++it;
        }
    }
    for (auto it = queued.begin(); it != queued.end();) {
        if ((*it)->channel->cancelled()) {
            (*it)->channel->push(cancelled_event());
            ++cancelled;
            it = queued.erase(it);
        } else {
            ++it;
        }
    }
    for (auto & s : active) {
        if (s->live() && s->channel->cancelled()) finish(*s, finish_reason::cancelled);
    }
}

bool engine::impl::decode_generate() {
    // Plan the step, then fit it to the free cells before anything is decoded: idle conversations give
    // way first, then the step's prefill shrinks, then the youngest running sequences are swapped out.
    std::vector<schedule_entry> plan;
    const auto & ledger = kv_exec->ledger();
    for (int attempt = 0;; ++attempt) {
        std::vector<schedule_input> in;
        in.reserve(active.size());
        int n_decoding = 0;
        for (const auto & s : active) {
            in.push_back({s->live() && s->decoding, s->live() ? s->prompt_remaining() : 0});
            n_decoding += s->live() && s->decoding ? 1 : 0;
        }
        const int budget = prefill_budget_for(step_cost, opts.max_step_ms, n_decoding, opts.prefill_chunk, chunk_align);
        schedule_limits limits{batch->capacity(), budget, chunk_align};
        plan = plan_step(in, limits);
        if (plan.empty()) return false;
        int need = 0;
        for (const auto & e : plan) need += e.n_tokens;
        if (need <= ledger.free() || make_room(need, false)) break;
        if (ledger.free() >= std::max(1, n_decoding)) {  // every decode fits: the prefill takes what is left
            limits.max_tokens = std::min(limits.max_tokens, ledger.free());
            plan = plan_step(in, limits);
            break;
        }
        if (attempt < 8 && make_room(std::max(1, n_decoding), true)) continue;  // preempted: plan again without them
        if (!promoting.empty()) return false;                        // their reserved cells come back soon
        // Only the oldest sequence is left and it does not fit: the pool is smaller than it needs.
        auto oldest = std::find_if(active.begin(), active.end(), [](const auto & s) { return s->live(); });
        fail(**oldest, errc::context_overflow,
             "this request alone needs more than the " + std::to_string(n_ctx) + " KV cells of the context; raise --ctx-size");
        return true;
    }

    batch->clear();
    int prefill_tokens = 0, prefill_chunks = 0;
    for (const auto & e : plan) {
        auto & s = *active[static_cast<size_t>(e.index)];
        s.logits_row = -1;
        if (s.decoding) {
            s.logits_row = batch->add(s.tokens.back(), s.n_past, s.id, true);
            continue;
        }
        for (int k = 0; k < e.n_tokens; ++k) {
            int pos = s.n_past + k;
            bool last = pos == s.prefill_end - 1;
            int row = batch->add(s.tokens[static_cast<size_t>(pos)], pos, s.id, last);
            if (last) s.logits_row = row;
        }
        prefill_tokens += e.n_tokens;
        ++prefill_chunks;
    }

    auto decode_started = steady::now();
    int ret = llama_decode(ctx, batch->get());
    if (ret == 1) {
        // The plan said the cells were free: the ledger and llama.cpp disagree. Recover as before the
        // planner existed (the youngest gives way), and say so: the tests treat this line as a failure.
        rc::log::error("engine", "decode_found_no_cells", {{"tokens", batch->size()}, {"free", ledger.free()}});
        auto youngest = std::find_if(active.rbegin(), active.rend(), [](const auto & s) { return s->live(); });
        if (youngest != active.rend()) fail(**youngest, errc::context_overflow, "the KV cache is full; retry later or raise --ctx-size");
        return true;
    }
    if (ret != 0) {
        rc::log::error("engine", "decode_failed", {{"ret", ret}, {"tokens", batch->size()}});
        for (const auto & e : plan) fail(*active[static_cast<size_t>(e.index)], errc::internal, "llama_decode failed (" + std::to_string(ret) + ")");
        return true;
    }
    const double ms = ms_between(decode_started, steady::now());
    for (const auto & e : plan) {
        auto & s = *active[static_cast<size_t>(e.index)];
        kv_exec->decoded(s.id, e.n_tokens);
        s.n_past += e.n_tokens;
        if (s.checkpoint_at == s.n_past) {  // (see ready_to_prefill)
            store(s, 0);
            next_checkpoint(s);
        }
    }
    if (rc::log::current_level() == rc::log::level::debug)  // not the fields' formatting on every step otherwise
        rc::log::debug("engine", "step", {{"tokens", batch->size()}, {"prefill", prefill_tokens}, {"ms", ms}});
    observe_step(batch->size(), ms);
    steps.seconds.observe(ms / 1000.0);
    steps.tokens.observe(batch->size());
    steps.prefill_chunks.fetch_add(static_cast<uint64_t>(prefill_chunks));
    prompt_tokens += static_cast<uint64_t>(prefill_tokens);
    kv_exec->stats().add_tokens(kv::source::computed, static_cast<uint64_t>(prefill_tokens));
    sample_outputs();
    for (const auto & e : plan) {  // once this step's tokens are on their way
        auto & s = *active[static_cast<size_t>(e.index)];
        if (s.live()) store_filled(s, s.n_past - e.n_tokens);
    }
    return true;
}

void engine::impl::sample_outputs() {
    for (auto & sp : active) {
        auto & s = *sp;
        if (!s.live() || s.logits_row < 0) continue;
        if (!s.decoding) {
            s.decoding = true;
            if (!s.resumed) s.first_token = steady::now();
        }
        llama_token tok = 0;
        try {
            tok = common_sampler_sample(s.sampler.get(), ctx, s.logits_row);
            common_sampler_accept(s.sampler.get(), tok, true);
        } catch (const std::exception & e) {
            // llama.cpp's grammar throws when a token it let through leaves it nowhere to go (upstream
            // #12597, #26787: Functionary's ">>>(" on a forced call). That sequence fails; the process
            // and the other sequences go on.
            rc::log::warn("engine", "sampling_failed", {{"seq", s.id}, {"error", e.what()}});
            fail(s, errc::internal, std::string("sampling failed: the constrained sampler refused the model's next token (") + e.what() + ")");
            continue;
        }
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
        for (int pos = 0; pos < s.n_prompt; ++pos) batch->add(s.tokens[static_cast<size_t>(pos)], pos, s.id, true);
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
    if (reason == finish_reason::cancelled) ++cancelled;
    else ++finished;
    // A finished conversation stays in the context for reuse (or, with no room for idle ones, goes
    // straight to the tiers below); a cancelled one frees its cells now.
    const bool keep = (max_idle > 0 || kv_exec->has_tiers()) && s.req.kind == request_kind::generate && reason != finish_reason::cancelled;
    if (!keep) {
        s.channel->push(std::move(ev));
        release(s);
        return;
    }
    // --kv-write-through: the client hears "done" once the blocks are on disk; the engine never waits.
    if (kv_exec->write_through()) {
        auto group = std::make_shared<kv::write_group>([ch = s.channel, ev = std::move(ev)]() mutable { ch->push(std::move(ev)); });
        retire(s, group);
        group->seal();
        return;
    }
    s.channel->push(std::move(ev));
    retire(s, nullptr);
}

void engine::impl::fail(sequence & s, errc code, const std::string & message) {
    if (s.done || s.idle) return;
    send_error(*s.channel, code, message);
    ++failed;
    release(s);
}

void engine::impl::release(sequence & s) {
    if (kv_exec && s.id >= 0) kv_exec->forget(s.id);
    if (s.id >= 0) free_ids.push_back(s.id);
    s.id = -1;
    s.done = true;
}

void engine::impl::remove_finished() {
    std::erase_if(active, [](const std::unique_ptr<sequence> & s) { return s->done; });
}

void engine::impl::fail_all(const std::string & message) {
    for (auto & [req, ch] : waiting) send_error(*ch, errc::unavailable, message);
    waiting.clear();
    for (auto & s : queued) send_error(*s->channel, errc::unavailable, message);
    queued.clear();
    for (auto & p : promoting) {
        p.in->abandon();
        if (kv_exec) kv_exec->unreserve(p.reserved);
        active.push_back(std::move(p.seq));  // failed below with the others
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
    queued_count.store(static_cast<int>(waiting.size() + queued.size()));
    int n_decoding = 0;
    for (const auto & s : active) n_decoding += s->live() && s->decoding ? 1 : 0;
    steps.prefill_budget.store(prefill_budget_for(step_cost, opts.max_step_ms, std::max(1, n_decoding), opts.prefill_chunk, chunk_align));
}

}  // namespace rc::engine
