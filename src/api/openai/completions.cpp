// POST /v1/completions — raw text completion: prompt as a string, strings, token ids or lists of
// token ids; n, echo, logprobs (int), stop, stream. Choices are numbered prompt by prompt (prompt
// p's choice i is index p·n + i) and, streamed, interleave as they are generated.
#include "http/api_error.h"
#include "api/generation_session.h"
#include "api/openai/openai_common.h"
#include "api/openai/openai_routes.h"
#include "http/stream_writer.h"

namespace rc::api::openai {
using namespace rc::http;  // written against the HTTP shell (src/http)

namespace {

constexpr size_t max_prompts = 16;

}  // namespace

std::vector<prompt_input> read_prompts(const json & body) {
    auto it = body.find("prompt");
    if (it == body.end() || it->is_null()) bad_request("'prompt' is required", "prompt");
    const json & p = *it;
    std::vector<prompt_input> out;
    if (p.is_string()) {
        out.push_back(prompt_input::of_text(p.get<std::string>()));
    } else if (p.is_array() && !p.empty() && p[0].is_number()) {
        out.push_back(prompt_input::of_tokens(read_token_ids(p, "prompt")));
    } else if (p.is_array() && !p.empty()) {
        if (p.size() > max_prompts) bad_request("'prompt' has more than " + std::to_string(max_prompts) + " entries", "prompt");
        for (const auto & e : p) {
            if (e.is_string()) out.push_back(prompt_input::of_text(e.get<std::string>()));
            else if (e.is_array()) out.push_back(prompt_input::of_tokens(read_token_ids(e, "prompt")));
            else bad_request("'prompt' must be a string, a list of strings or token ids", "prompt");
        }
    } else {
        bad_request("'prompt' must be a non-empty string, list of strings or token ids", "prompt");
    }
    return out;
}

namespace {

json legacy_logprobs(const std::vector<engine::token_choice> & toks, size_t offset0) {
    json tokens = json::array(), lps = json::array(), tops = json::array(), offsets = json::array();
    size_t offset = offset0;
    for (const auto & t : toks) {
        tokens.push_back(t.chosen.text);
        lps.push_back(t.chosen.logprob);
        json top = json::object();
        for (const auto & a : t.top) top[a.text] = a.logprob;
        tops.push_back(top);
        offsets.push_back(offset);
        offset += t.chosen.text.size();
    }
    return json{{"tokens", tokens}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

const char * finish_name(engine::finish_reason r) { return r == engine::finish_reason::length ? "length" : "stop"; }

struct completion_reply {
    std::string model;
    bool logprobs = false;
    bool echo = false;
    bool include_usage = false;
};

// Per choice: the prompt's text when echo is on.
std::vector<std::string> echoes(const generation_session & s, bool echo) {
    std::vector<std::string> out(s.choices());
    if (echo) {
        for (size_t i = 0; i < out.size(); ++i) out[i] = s.model().detokenize(s.prompt_tokens(i), false);
    }
    return out;
}

void add_usage(engine::usage_stats & total, const engine::usage_stats & u) {
    total.prompt_tokens += u.prompt_tokens;
    total.cached_tokens += u.cached_tokens;
    total.completion_tokens += u.completion_tokens;
}

http_response respond_whole(generation_session & s, const completion_reply & reply, const http_request & req) {
    const auto echo = echoes(s, reply.echo);
    std::vector<std::vector<engine::token_choice>> tokens(s.choices());
    std::vector<json> choices(s.choices());
    engine::usage_stats total;
    s.run_whole(req, [&](const session_event & ev) {
        if (ev.kind == session_event::type::delta) {
            if (reply.logprobs) tokens[ev.choice].insert(tokens[ev.choice].end(), ev.tokens.begin(), ev.tokens.end());
            return;
        }
        choices[ev.choice] = {{"index", ev.choice}, {"text", echo[ev.choice] + ev.message->content},
                              {"logprobs", reply.logprobs ? legacy_logprobs(tokens[ev.choice], echo[ev.choice].size()) : json(nullptr)},
                              {"finish_reason", finish_name(ev.finish)}};
        add_usage(total, ev.usage);
    });
    http_response r;
    r.body = dump(json{{"id", make_id("cmpl")}, {"object", "text_completion"}, {"created", unix_now()},
                       {"model", reply.model}, {"choices", std::move(choices)}, {"usage", usage_json(total)}});
    return r;
}

http_response respond_stream(std::shared_ptr<generation_session> s, completion_reply reply) {
    return streamed_response("text/event-stream", sse_keep_alive, [s, reply](stream_writer & w) {
        const chunk_framing chunks(make_id("cmpl"), "text_completion", unix_now(), reply.model, false);
        auto chunk = [&](size_t i, const std::string & text, json logprobs, json finish) {
            return chunks.choice({{"index", i}, {"text", text}, {"logprobs", std::move(logprobs)}, {"finish_reason", std::move(finish)}});
        };
        const auto echo = echoes(*s, reply.echo);
        for (size_t i = 0; i < echo.size(); ++i) {
            if (!echo[i].empty() && !w.write(chunk(i, echo[i], nullptr, nullptr))) return;
        }
        engine::usage_stats total;
        auto openai_error = [](const rc::error & e) { return stream_error(dialect::openai, e); };
        bool finished = s->run_stream(w, openai_error, [&](const session_event & ev) {
            if (ev.kind == session_event::type::delta)
                return w.write(chunk(ev.choice, ev.delta.content, reply.logprobs ? legacy_logprobs(ev.tokens, 0) : json(nullptr), nullptr));
            add_usage(total, ev.usage);
            return w.write(chunk(ev.choice, "", nullptr, finish_name(ev.finish)));
        });
        if (!finished) return;
        const json usage = usage_json(total);
        w.write(chunks.end(reply.include_usage ? &usage : nullptr));
    });
}

http_response handle(api_context & ctx, const http_request & req) {
    json body = parse_body(req);
    generation_input in;
    in.model = require_string(body, "model");
    in.task = "completions";
    if (auto suffix = opt_string(body, "suffix"); suffix && !suffix->empty())
        bad_request("'suffix' (fill-in-the-middle) is not supported", "suffix");
    in.prompts = read_prompts(body);
    read_sampling(body, in.params);
    // OpenAI's default here is 16 tokens, not "until the end".
    in.params.max_tokens = body.contains("max_tokens") && !body["max_tokens"].is_null() ? read_max_tokens(body, ctx, {"max_tokens"}) : 16;
    in.n = read_n(body);
    auto logprobs = opt_int(body, "logprobs", 0, 5);
    in.params.logprobs_top = logprobs ? static_cast<int>(*logprobs) : -1;
    completion_reply reply{in.model, logprobs.has_value(), opt_bool(body, "echo").value_or(false), read_include_usage(body)};
    in.stream = opt_bool(body, "stream").value_or(false);

    const auto entry = find_model_entry(ctx, in.model);  // before `in` moves into the session
    auto session = generation_session::start(ctx, entry, std::move(in), req.client_gone);
    return session->streaming() ? respond_stream(std::move(session), std::move(reply)) : respond_whole(*session, reply, req);
}

}  // namespace

route completions_route(api_context & ctx) {
    return {"POST", "/v1/completions", [&ctx](const http_request & req) { return handle(ctx, req); }};
}

}  // namespace rc::api::openai
