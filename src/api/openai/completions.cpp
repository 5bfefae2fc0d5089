// POST /v1/completions — raw text completion: prompt as a string, strings, token ids or lists of
// token ids; n, echo, logprobs (int), stop, stream.
#include "api/api_error.h"
#include "api/generation_pump.h"
#include "api/openai/openai_common.h"
#include "api/openai/openai_routes.h"

namespace rc::api::openai {

namespace {

std::vector<llama_token> token_list(const json & arr, const llama::model & m) {
    std::vector<llama_token> out;
    for (const auto & t : arr) {
        if (!t.is_number_integer() || !m.valid_token(t.get<llama_token>())) bad_request("'prompt' token ids must be integers within the vocabulary", "prompt");
        out.push_back(t.get<llama_token>());
    }
    return out;
}

// Every prompt of the request, tokenized.
std::vector<std::vector<llama_token>> read_prompts(const json & body, const llama::model & m) {
    auto it = body.find("prompt");
    if (it == body.end() || it->is_null()) bad_request("'prompt' is required", "prompt");
    const json & p = *it;
    std::vector<std::vector<llama_token>> out;
    if (p.is_string()) {
        out.push_back(m.tokenize(p.get<std::string>(), true, false));
    } else if (p.is_array() && !p.empty() && p[0].is_number_integer()) {
        out.push_back(token_list(p, m));
    } else if (p.is_array() && !p.empty()) {
        for (const auto & e : p) {
            if (e.is_string()) out.push_back(m.tokenize(e.get<std::string>(), true, false));
            else if (e.is_array()) out.push_back(token_list(e, m));
            else bad_request("'prompt' must be a string, a list of strings or token ids", "prompt");
        }
    } else {
        bad_request("'prompt' must be a non-empty string, list of strings or token ids", "prompt");
    }
    if (out.size() > 16) bad_request("'prompt' has more than 16 entries", "prompt");
    for (const auto & t : out) {
        if (t.empty()) bad_request("'prompt' must not be empty", "prompt");
    }
    return out;
}

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

struct completion_job {
    std::vector<std::shared_ptr<engine::request_channel>> channels;
    std::vector<std::string> echo;  // per channel: prompt text to prepend, when echo is on
    bool logprobs = false;
    std::string model_name;
    std::optional<generation_meter> meter;  // set right before the first submit
    ~completion_job() {
        for (auto & ch : channels) {
            if (!ch->finished()) ch->cancel();
        }
    }
};

const char * finish_name(const engine::generation_event & done) {
    return done.finish == engine::finish_reason::length ? "length" : "stop";
}

http_response respond_whole(completion_job & job, const http_request & req) {
    json choices = json::array();
    engine::usage_stats total;
    for (size_t i = 0; i < job.channels.size(); ++i) {
        std::string text = job.echo[i];
        std::vector<engine::token_choice> toks;
        auto done = pump(*job.channels[i], req.client_gone ? [&] { return !req.client_gone(); } : std::function<bool()>(),
                         [&](const engine::generation_event & ev) {
                             text += ev.text;
                             toks.insert(toks.end(), ev.tokens.begin(), ev.tokens.end());
                             return true;
                         },
                         *job.meter);
        if (done.kind == engine::generation_event::type::error) raise_event_error(done.error_code, done.error_message);
        choices.push_back({{"index", i}, {"text", text}, {"logprobs", job.logprobs ? legacy_logprobs(toks, job.echo[i].size()) : json(nullptr)},
                           {"finish_reason", finish_name(done)}});
        total.prompt_tokens += done.usage.prompt_tokens;
        total.cached_tokens += done.usage.cached_tokens;
        total.completion_tokens += done.usage.completion_tokens;
    }
    http_response r;
    r.body = dump(json{{"id", make_id("cmpl")}, {"object", "text_completion"}, {"created", unix_now()},
                       {"model", job.model_name}, {"choices", choices}, {"usage", usage_json(total)}});
    return r;
}

http_response respond_stream(std::shared_ptr<completion_job> job, bool include_usage) {
    http_response r;
    r.content_type = "text/event-stream";
    r.headers.push_back({"Cache-Control", "no-cache"});
    r.stream = [job, include_usage](stream_sink & sink) {
        const std::string id = make_id("cmpl");
        const long long created = unix_now();
        auto chunk = [&](json choices) {
            return json{{"id", id}, {"object", "text_completion"}, {"created", created}, {"model", job->model_name}, {"choices", std::move(choices)}};
        };
        engine::usage_stats total;
        for (size_t i = 0; i < job->channels.size(); ++i) {
            if (!job->echo[i].empty() && !sink.write(sse(chunk(json::array({{{"index", i}, {"text", job->echo[i]}, {"logprobs", nullptr}, {"finish_reason", nullptr}}})))))
                return;
            bool alive = true;
            auto done = pump(*job->channels[i], sink.alive, [&](const engine::generation_event & ev) {
                json lp = job->logprobs ? legacy_logprobs(ev.tokens, 0) : json(nullptr);
                alive = sink.write(sse(chunk(json::array({{{"index", i}, {"text", ev.text}, {"logprobs", lp}, {"finish_reason", nullptr}}}))));
                return alive;
            }, *job->meter);
            if (!alive) return;
            if (done.kind == engine::generation_event::type::error) {
                sink.write(sse(json{{"error", {{"message", done.error_message}, {"type", "server_error"}, {"param", nullptr}, {"code", done.error_code}}}}));
                return;
            }
            if (!sink.write(sse(chunk(json::array({{{"index", i}, {"text", ""}, {"logprobs", nullptr}, {"finish_reason", finish_name(done)}}})))))
                return;
            total.prompt_tokens += done.usage.prompt_tokens;
            total.cached_tokens += done.usage.cached_tokens;
            total.completion_tokens += done.usage.completion_tokens;
        }
        if (include_usage) {
            json u = chunk(json::array());
            u["usage"] = usage_json(total);
            sink.write(sse(u));
        }
        sink.write("data: [DONE]\n\n");
    };
    return r;
}

http_response handle(api_context & ctx, const http_request & req) {
    json body = parse_body(req);
    auto eng = acquire_model(ctx, body);
    const auto & m = eng->model();
    if (auto suffix = opt_string(body, "suffix"); suffix && !suffix->empty())
        bad_request("'suffix' (fill-in-the-middle) is not supported", "suffix");

    engine::generation_request base;
    read_generation_params(body, ctx, m, base);
    if (!body.contains("max_tokens") || body["max_tokens"].is_null()) base.max_tokens = 16;  // OpenAI's default here
    int n = read_n(body);
    auto logprobs = opt_int(body, "logprobs", 0, 5);
    base.logprobs_top = logprobs ? static_cast<int>(*logprobs) : -1;
    bool echo = opt_bool(body, "echo").value_or(false);
    bool stream = opt_bool(body, "stream").value_or(false);
    bool include_usage = false;
    if (auto it = body.find("stream_options"); it != body.end() && it->is_object()) include_usage = opt_bool(*it, "include_usage").value_or(false);

    auto job = std::make_shared<completion_job>();
    job->logprobs = logprobs.has_value();
    job->model_name = require_string(body, "model");
    auto prompts = read_prompts(body, m);
    job->meter.emplace(ctx, job->model_name);
    for (auto & prompt : prompts) {
        for (int i = 0; i < n; ++i) {
            engine::generation_request r = base;
            r.prompt = prompt;
            if (r.sampling.seed && i > 0) r.sampling.seed = *r.sampling.seed + static_cast<uint32_t>(i);
            auto ch = eng->submit(std::move(r));
            if (!ch) raise(ch.err());
            job->channels.push_back(ch.value());
            job->echo.push_back(echo ? m.detokenize(prompt, false) : std::string());
        }
    }
    return stream ? respond_stream(job, include_usage) : respond_whole(*job, req);
}

}  // namespace

route completions_route(api_context & ctx) {
    return {"POST", "/v1/completions", [&ctx](const http_request & req) { return handle(ctx, req); }};
}

}  // namespace rc::api::openai
