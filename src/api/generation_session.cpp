#include "api/generation_session.h"

#include <algorithm>
#include <span>

#include "engine/message_boundaries.h"
#include "engine/request_checks.h"
#include "http/api_error.h"
#include "util/safe_quote.h"

namespace rc::api {
using namespace rc::http;  // written against the HTTP shell (src/http)

namespace {

using namespace std::chrono_literals;

// With n > 1 the session waits on one choice's channel at a time (channels have no shared signal):
// the choice that produced last. Their sequences step together, so the others' events are already
// there when it wakes; this bound only matters while the waited-on one stalls (still queued, say).
constexpr auto multi_choice_wait = 20ms;
// How long a cancelled choice may take to report its end (the engine answers within one step).
constexpr auto drain_limit = 10s;

// The engine's vocabulary check (engine/request_checks.h), as a 400 naming the client's field.
void check_vocabulary(std::span<const llama_token> ids, const llama::model & m, const std::string & field) {
    if (auto p = engine::check_token_ids(m, ids))
        bad_request("'" + field + "' holds token " + std::to_string(p.token) + ", outside this model's vocabulary (0.." +
                        std::to_string(m.info().n_vocab - 1) + ")",
                    field);
}

}  // namespace

models::model_entry find_model_entry(api_context & ctx, const std::string & name, const std::string & field) {
    auto e = ctx.models.catalog().find(name);
    if (!e) raise(e.err(), field);
    return std::move(e.value());
}

models::model_lease lease_model(api_context & ctx, const models::model_entry & model, std::optional<std::chrono::nanoseconds> keep_alive,
                                std::chrono::nanoseconds * load_time) {
    const auto t0 = std::chrono::steady_clock::now();
    auto lease = ctx.models.acquire(model);
    if (!lease) raise(lease.err(), "model");
    // From here the lease applies keep_alive however the request ends (0: unload after it).
    if (keep_alive) lease->set_keep_alive(*keep_alive);
    if (load_time) *load_time = std::chrono::steady_clock::now() - t0;
    return std::move(lease.value());
}

generation_session::generation_session(api_context & ctx, models::model_lease lease, std::string model_name)
    : ctx_(ctx), lease_(std::move(lease)), model_name_(std::move(model_name)) {}

generation_session::~generation_session() {
    // A client that left, or an error on one choice, must not leave the others generating.
    for (auto & c : choices_) {
        if (!c.finished && c.channel) c.channel->cancel();
    }
}

std::shared_ptr<generation_session> generation_session::start(api_context & ctx, const models::model_entry & model, generation_input in,
                                                               std::function<bool()> client_gone) {
    if (in.chat) in.chat->cancelled = std::move(client_gone);
    std::chrono::nanoseconds load_time{0};
    auto lease = lease_model(ctx, model, in.keep_alive, &load_time);
    std::shared_ptr<generation_session> s(new generation_session(ctx, std::move(lease), in.model));
    s->load_time_ = load_time;
    s->stream_ = in.stream;
    s->prepare(model, in);
    s->submit(in);
    return s;
}

void generation_session::prepare(const models::model_entry & model, generation_input & in) {
    const engine::engine & eng = lease_.engine();
    const llama::model & m = eng.model();
    const std::string who = "\"" + (in.model.empty() ? model.name : in.model) + "\"";
    if (engine::check_model_kind(engine::request_kind::generate, eng.is_embedding()))
        bad_request(who + " does not support " + in.task + " (it is an embedding model)", "model");
    if (in.think && !model_supports_thinking(m)) bad_request(who + " does not support thinking", "think");

    for (const auto & [tok, bias] : in.params.sampling.logit_bias) {
        if (engine::check_token_ids(m, std::span<const llama_token>(&tok, 1)))
            bad_request("'logit_bias' key " + safe_quote(std::to_string(tok)) + " is not a token id of this model", "logit_bias");
    }
    rendered_prompts r = render_prompts(eng, in);
    prompts_ = std::move(r.prompts);
    if (in.chat && in.context.empty() && eng.keeps_whole_states())
        message_boundaries_ = engine::message_boundaries(m, *in.chat, prompts_.front(), in.render_memo).positions(static_cast<int>(prompts_.front().size()));
    if (r.chat) {
        grammar_ = std::move(r.chat->grammar);
        template_stops_ = std::move(r.chat->additional_stops);
        parser_ = std::move(r.chat->parser);
        tool_ids_ = r.chat->tool_ids;
    } else if (!in.output_schema.empty()) {
        auto c = engine::schema_constraint(in.output_schema);
        if (!c) raise(c.err(), in.schema_field);
        grammar_ = std::move(c.value());
    }
}

void check_prompt_text(const engine::engine & eng, size_t bytes, const std::string & field) { check_prompt_text(eng.model(), eng.n_ctx(), bytes, field); }

void check_prompt_text(const llama::model & m, int context_tokens, size_t bytes, const std::string & field) {
    const size_t n_ctx = static_cast<size_t>(std::max(1, context_tokens));
    const size_t longest = std::max<size_t>(1, m.longest_token_bytes());
    if (bytes / longest <= n_ctx) return;
    bad_request("'" + field + "' is " + std::to_string(bytes) + " bytes: more than the " + std::to_string(n_ctx) +
                    "-token context could hold (each token covers at most " + std::to_string(longest) + " bytes of text)",
                field);
}

size_t chat_text_bytes(const std::vector<common_chat_msg> & messages) {
    size_t n = 0;
    for (const auto & m : messages) {
        n += m.content.size() + m.reasoning_content.size();
        for (const auto & part : m.content_parts) n += part.text.size();
        for (const auto & call : m.tool_calls) n += call.name.size() + call.arguments.size();
    }
    return n;
}

namespace {
// The request field a render error is about: what cannot be enforced, else the messages.
std::string render_error_field(const rc::error & e, const generation_input & in) {
    if (e.message.starts_with("tool_choice")) return "tool_choice";
    if (e.message.starts_with("response_format")) return in.schema_field;
    return in.prompt_field;
}
}  // namespace

rendered_prompts render_prompts(const engine::engine & eng, const generation_input & in) { return render_prompts(eng.model(), eng.n_ctx(), in); }

rendered_prompts render_prompts(const llama::model & m, int n_ctx, const generation_input & in) {
    rendered_prompts out;
    check_vocabulary(in.context, m, "context");
    std::vector<llama_token> context(in.context.begin(), in.context.end());
    // A continued context already holds the BOS token.
    const bool add_special = context.empty();

    if (in.chat) {
        if (in.chat->messages.size() > max_chat_messages)  // dialects check earlier; this keeps the bound for every path
            bad_request("'" + in.prompt_field + "' has more than " + std::to_string(max_chat_messages) + " messages", in.prompt_field);
        check_prompt_text(m, n_ctx, chat_text_bytes(in.chat->messages), in.prompt_field);  // before the render's copies
        auto rendered = in.render_memo && in.chat->prompt_only ? in.render_memo->render(*in.chat, in.model) : engine::render_chat(m, *in.chat, in.model);
        if (!rendered) raise(rendered.err(), render_error_field(rendered.err(), in));
        check_prompt_text(m, n_ctx, rendered->text.size(), in.prompt_field);
        std::vector<llama_token> tokens = std::move(context);
        auto text = m.tokenize(rendered->text, add_special, true);
        tokens.insert(tokens.end(), text.begin(), text.end());
        out.prompts.push_back(std::move(tokens));
        out.chat = std::move(rendered.value());
        return out;
    }
    for (const auto & p : in.prompts) {
        std::vector<llama_token> tokens = context;
        if (p.is_tokens) {
            check_vocabulary(p.tokens, m, in.prompt_field);
            tokens.insert(tokens.end(), p.tokens.begin(), p.tokens.end());
        } else {
            check_prompt_text(m, n_ctx, p.text.size(), in.prompt_field);
            auto text = m.tokenize(p.text, add_special, in.parse_special);
            tokens.insert(tokens.end(), text.begin(), text.end());
        }
        if (engine::check_prompt(m, tokens).what == engine::request_problem::kind::empty_prompt)
            bad_request("'" + in.prompt_field + "' must not be empty", in.prompt_field);
        out.prompts.push_back(std::move(tokens));
    }
    return out;
}

void generation_session::submit(generation_input & in) {
    engine::engine & eng = lease_.engine();
    engine::generation_request base = std::move(in.params);
    base.grammar = std::move(grammar_);
    for (auto & s : template_stops_) base.stop.push_back(std::move(s));
    meter_.emplace(ctx_.metrics.get(), lease_.name());
    choices_.reserve(prompts_.size() * static_cast<size_t>(in.n));
    for (size_t p = 0; p < prompts_.size(); ++p) {
        for (int i = 0; i < in.n; ++i) {
            engine::generation_request r = base;
            r.prompt = prompts_[p];
            r.message_boundaries = message_boundaries_;
            // The choices of one prompt must differ: each gets the next seed.
            if (r.sampling.seed && i > 0) r.sampling.seed = *r.sampling.seed + static_cast<uint32_t>(i);
            auto ch = eng.submit(std::move(r));
            if (!ch) raise(ch.err(), ch.err().code == errc::context_overflow ? in.prompt_field : std::string());
            choices_.push_back({ch.value(), chat_output_parser(parser_, tool_ids_), p, false});
        }
    }
    open_ = choices_.size();
}

bool generation_session::handle(size_t i, engine::generation_event & ev, const std::function<bool(const session_event &)> & on_event) {
    using type = engine::generation_event::type;
    choice & c = choices_[i];
    meter_->on_event(ev, clock::now(), i == 0);
    session_event out;
    out.choice = i;
    if (ev.kind == type::text) {
        if (stream_) out.delta = c.output.feed(ev.text);
        else c.output.append(ev.text);
        out.tokens = std::move(ev.tokens);
        return on_event(out);
    }
    c.finished = true;
    --open_;
    if (ev.kind == type::error) {
        out.kind = session_event::type::error;
        out.error = std::move(ev.error);
        return on_event(out);
    }
    if (auto tail = c.output.finish(ev.finish == engine::finish_reason::length); stream_ && !tail.empty()) {
        out.delta = std::move(tail);
        if (!on_event(out)) return false;
        out.delta = {};
    }
    out.kind = session_event::type::done;
    out.finish = ev.finish;
    out.usage = ev.usage;
    out.message = &c.output.message();
    return on_event(out);
}

bool generation_session::run(const std::function<bool()> & client_alive, const std::function<bool(const session_event &)> & on_event) {
    auto next_check = clock::now() + client_check;
    size_t lead = 0;  // the choice whose channel is waited on
    session_event idle;
    idle.kind = session_event::type::idle;
    while (open_ > 0) {
        auto now = clock::now();
        if (now >= next_check) {
            // Asked on a clock, not only when the channel is quiet: a client that left a steady
            // stream (or a request that is not streamed) is noticed within client_check.
            if ((client_alive && !client_alive()) || !on_event(idle)) {
                cancel_and_drain();
                return false;
            }
            if (ctx_.ending->load()) {
                cancel_and_drain();
                session_event ended;
                ended.kind = session_event::type::error;
                ended.error = make_error(errc::unavailable, "the server is shutting down; send the request again");
                on_event(ended);
                return false;
            }
            next_check = now + client_check;
        }
        while (choices_[lead].finished) lead = (lead + 1) % choices_.size();
        auto wait = std::chrono::ceil<std::chrono::milliseconds>(next_check - now);
        if (choices_.size() > 1) wait = std::min<std::chrono::milliseconds>(wait, multi_choice_wait);
        bool lead_moved = false;
        if (auto ev = choices_[lead].channel->pop(wait)) {
            lead_moved = true;
            if (!handle(lead, *ev, on_event)) {
                cancel_and_drain();
                return false;
            }
        }
        // The other choices step with the lead: take what they have without waiting.
        for (size_t i = 0; i < choices_.size() && choices_.size() > 1; ++i) {
            if (i == lead) continue;
            while (!choices_[i].finished) {
                auto ev = choices_[i].channel->pop(0ms);
                if (!ev) break;
                if (!handle(i, *ev, on_event)) {
                    cancel_and_drain();
                    return false;
                }
                if (!lead_moved && !choices_[lead].finished) {
                    lead = i;  // the lead stalls while this one produces: wait on this one next
                    lead_moved = true;
                }
            }
        }
    }
    return true;
}

void generation_session::run_whole(const http_request & req, const std::function<void(const session_event &)> & on_event) {
    std::optional<rc::error> failed;
    auto alive = req.client_gone ? std::function<bool()>([&req] { return !req.client_gone(); }) : std::function<bool()>();
    bool finished = run(alive, [&](const session_event & ev) {
        if (ev.kind == session_event::type::error) {
            failed = ev.error;
            return false;
        }
        if (ev.kind != session_event::type::idle) on_event(ev);
        return true;
    });
    if (failed) raise(*failed);
    if (!finished) client_went_away();
}

bool generation_session::run_stream(stream_writer & w, const std::function<std::string(const rc::error &)> & error_chunk,
                                    const std::function<bool(const session_event &)> & on_event) {
    return run([&w] { return w.alive(); }, [&](const session_event & ev) {
        switch (ev.kind) {
            case session_event::type::idle: return w.idle();
            case session_event::type::error:
                w.write(error_chunk(ev.error));  // the stream's last chunk: nothing follows it
                return false;
            default: return on_event(ev);
        }
    });
}

void generation_session::cancel_and_drain() {
    for (auto & c : choices_) {
        if (!c.finished) c.channel->cancel();
    }
    // The engine answers each cancel with a terminal event within a step; metering it counts the
    // request as cancelled (rustycage_requests_finished_total).
    const auto deadline = clock::now() + drain_limit;
    for (size_t i = 0; i < choices_.size(); ++i) {
        auto & c = choices_[i];
        while (!c.finished && clock::now() < deadline) {
            auto ev = c.channel->pop(100ms);
            if (!ev) continue;
            meter_->on_event(*ev, clock::now(), i == 0);
            if (ev->kind != engine::generation_event::type::text) {
                c.finished = true;
                --open_;
            }
        }
    }
}

}  // namespace rc::api
