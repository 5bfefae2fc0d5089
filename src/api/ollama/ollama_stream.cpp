#include "api/ollama/ollama_stream.h"

#include <random>

#include "api/api_error.h"
#include "api/generation_pump.h"
#include "engine/chat_format.h"
#include "util/log.h"

namespace rc::api::ollama {

namespace {

// The part of `now` beyond what was already sent, when `now` extends it; otherwise nothing (the
// parser revised text it had shown, which cannot be taken back from the client).
std::string extension(const std::string & now, std::string & sent) {
    if (now.size() <= sent.size() || now.compare(0, sent.size(), sent) != 0) return {};
    std::string d = now.substr(sent.size());
    sent = now;
    return d;
}

std::string new_tool_call_id() {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    static const char * chars = "abcdefghijklmnopqrstuvwxyz0123456789";
    std::string id = "call_";
    for (int i = 0; i < 8; ++i) id += chars[rng() % 36];
    return id;
}

json bytes_of(const std::string & s) {
    json arr = json::array();
    for (unsigned char c : s) arr.push_back(static_cast<int>(c));
    return arr;
}

json head(const generation_job & job) { return json{{"model", job.model}, {"created_at", rfc3339_now()}}; }

// The message object of a chat line; the whole reply carries thinking and tool calls too.
json chat_message(const std::string & content, const std::string & thinking) {
    json m = {{"role", "assistant"}, {"content", content}};
    if (!thinking.empty()) m["thinking"] = thinking;
    return m;
}

json chunk(const generation_job & job, const output_delta & d) {
    json c = head(job);
    if (job.shape == reply_shape::chat) {
        c["message"] = chat_message(d.content, d.thinking);
    } else {
        c["response"] = d.content;
        if (!d.thinking.empty()) c["thinking"] = d.thinking;
    }
    c["done"] = false;
    return c;
}

// done_reason, context (generate) and the timing fields, appended in Ollama's order.
void add_final_fields(json & out, const generation_job & job, const engine::generation_event & done,
                      const std::vector<llama_token> & generated) {
    out["done"] = true;
    out["done_reason"] = done.finish == engine::finish_reason::length ? "length" : "stop";
    if (job.shape == reply_shape::generate) {
        json ctx = json::array();
        for (llama_token t : job.prompt) ctx.push_back(t);
        for (llama_token t : generated) ctx.push_back(t);
        out["context"] = std::move(ctx);
    }
    out["total_duration"] = ns_since(job.started);
    out["load_duration"] = static_cast<long long>(job.load_time.count());
    out["prompt_eval_count"] = done.usage.prompt_tokens;
    out["prompt_eval_duration"] = ns_from_ms(done.usage.prompt_ms);
    out["eval_count"] = done.usage.completion_tokens;
    out["eval_duration"] = ns_from_ms(done.usage.generation_ms);
}

void collect_tokens(const engine::generation_event & ev, std::vector<llama_token> & generated) {
    for (const auto & t : ev.tokens) generated.push_back(t.chosen.token);
}

http_response respond_whole(generation_job & job, const http_request & req) {
    output_splitter split(job.parser);
    std::vector<llama_token> generated;
    std::vector<engine::token_choice> choices;
    auto done = pump(*job.channel, req.client_gone ? [&] { return !req.client_gone(); } : std::function<bool()>(),
                     [&](const engine::generation_event & ev) {
                         split.feed(ev.text);
                         collect_tokens(ev, generated);
                         if (job.logprobs) choices.insert(choices.end(), ev.tokens.begin(), ev.tokens.end());
                         return true;
                     },
                     *job.meter);
    if (done.kind == engine::generation_event::type::error) raise_event_error(done.error_code, done.error_message);
    split.finish();
    const common_chat_msg & msg = split.message();
    json out = head(job);
    if (job.shape == reply_shape::chat) {
        json m = chat_message(msg.content, msg.reasoning_content);
        if (!msg.tool_calls.empty()) m["tool_calls"] = tool_calls_json(msg.tool_calls);
        out["message"] = std::move(m);
    } else {
        out["response"] = msg.content;
        if (!msg.reasoning_content.empty()) out["thinking"] = msg.reasoning_content;
    }
    add_final_fields(out, job, done, generated);
    if (job.logprobs) out["logprobs"] = logprobs_json(choices);
    return json_response(out);
}

http_response respond_stream(std::shared_ptr<generation_job> job) {
    http_response r;
    r.content_type = "application/x-ndjson";
    r.headers.push_back({"Cache-Control", "no-cache"});
    r.stream = [job](stream_sink & sink) {
        output_splitter split(job->parser);
        std::vector<llama_token> generated;
        // A line per event that shows something; logprobs travel with the event that produced them
        // even while the parser holds its text back.
        auto send = [&](const output_delta & d, const std::vector<engine::token_choice> & toks) {
            bool with_logprobs = job->logprobs && !toks.empty();
            if (d.empty() && !with_logprobs) return true;
            json c = chunk(*job, d);
            if (with_logprobs) c["logprobs"] = logprobs_json(toks);
            return sink.write(ndjson(c));
        };
        bool alive = true;
        auto done = pump(*job->channel, sink.alive, [&](const engine::generation_event & ev) {
            collect_tokens(ev, generated);
            alive = send(split.feed(ev.text), ev.tokens);
            return alive;
        }, *job->meter);
        if (!alive) return;
        if (done.kind == engine::generation_event::type::error) {
            sink.write(ndjson(json{{"error", done.error_message}}));
            return;
        }
        if (!send(split.finish(), {})) return;
        if (job->shape == reply_shape::chat && !split.message().tool_calls.empty()) {
            json c = chunk(*job, {});
            c["message"]["tool_calls"] = tool_calls_json(split.message().tool_calls);
            if (!sink.write(ndjson(c))) return;
        }
        json last = chunk(*job, {});
        last.erase("done");
        add_final_fields(last, *job, done, generated);
        sink.write(ndjson(last));
    };
    return r;
}

}  // namespace

output_delta output_splitter::feed(const std::string & piece) {
    if (!parser_) {
        // Raw text needs no parse; appending keeps long replies linear.
        msg_.role = "assistant";
        msg_.content += piece;
        return {piece, {}};
    }
    text_ += piece;
    common_chat_msg next = engine::parse_chat_output(text_, true, *parser_);
    if (next.empty()) return {};  // the parser holds back text that may still become markup
    return advance(std::move(next));
}

output_delta output_splitter::finish() {
    if (!parser_) return {};
    return advance(engine::parse_chat_output(text_, false, *parser_));
}

output_delta output_splitter::advance(common_chat_msg next) {
    output_delta d;
    d.content = extension(next.content, sent_content_);
    d.thinking = extension(next.reasoning_content, sent_thinking_);
    msg_ = std::move(next);
    return d;
}

generation_job::~generation_job() {
    if (channel && !channel->finished()) channel->cancel();
    if (ctx) unload_if_asked(*ctx, model, keep_alive);
}

http_response respond(const std::shared_ptr<generation_job> & job, bool stream, const http_request & req) {
    return stream ? respond_stream(job) : respond_whole(*job, req);
}

json tool_calls_json(const std::vector<common_chat_tool_call> & calls) {
    json out = json::array();
    for (size_t i = 0; i < calls.size(); ++i) {
        const auto & tc = calls[i];
        json args = tc.arguments.empty() ? json::object() : json::parse(tc.arguments, nullptr, false);
        if (!args.is_object()) {
            // Ollama's arguments are always an object; a model that wrote something else gets an empty
            // one rather than the OpenAI string shape.
            rc::log::warn("ollama", "tool_arguments_not_object", {{"tool", tc.name}, {"arguments", tc.arguments}});
            args = json::object();
        }
        out.push_back({{"id", tc.id.empty() ? new_tool_call_id() : tc.id},
                       {"function", {{"index", i}, {"name", tc.name}, {"arguments", std::move(args)}}}});
    }
    return out;
}

json logprobs_json(const std::vector<engine::token_choice> & tokens) {
    json out = json::array();
    for (const auto & t : tokens) {
        json top = json::array();
        for (const auto & a : t.top) top.push_back({{"token", a.text}, {"logprob", a.logprob}, {"bytes", bytes_of(a.text)}});
        json e = {{"token", t.chosen.text}, {"logprob", t.chosen.logprob}, {"bytes", bytes_of(t.chosen.text)}};
        if (!top.empty()) e["top_logprobs"] = std::move(top);
        out.push_back(std::move(e));
    }
    return out;
}

}  // namespace rc::api::ollama
