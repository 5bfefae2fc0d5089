#include "api/ollama/ollama_stream.h"

#include "http/api_error.h"
#include "http/stream_writer.h"
#include "engine/tool_call_ids.h"
#include "util/log.h"

namespace rc::api::ollama {
using namespace rc::http;  // written against the HTTP shell (src/http)

namespace {

json bytes_of(const std::string & s) {
    json arr = json::array();
    for (unsigned char c : s) arr.push_back(static_cast<int>(c));
    return arr;
}

json chat_message(const std::string & content, const std::string & thinking) {
    json m = {{"role", "assistant"}, {"content", content}};
    if (!thinking.empty()) m["thinking"] = thinking;
    return m;
}

// One partial line: {"model", "created_at", "message"|"response"(, "thinking"), "done": false(, "logprobs")}.
// Written as text around small dumps: the head is the same for every line of the stream.
class line_writer {
  public:
    explicit line_writer(const reply_options & o) : shape_(o.shape), head_("{\"model\":" + dump(json(o.model)) + ",\"created_at\":\"") {}

    std::string partial(const std::string & content, const std::string & thinking, const json * logprobs = nullptr,
                        const json * tool_calls = nullptr) const {
        std::string line = head_ + rfc3339_now() + "\",";
        if (shape_ == reply_shape::chat) {
            json m = chat_message(content, thinking);
            if (tool_calls) m["tool_calls"] = *tool_calls;
            line += "\"message\":" + dump(m);
        } else {
            line += "\"response\":" + dump(json(content));
            if (!thinking.empty()) line += ",\"thinking\":" + dump(json(thinking));
        }
        line += ",\"done\":false";
        if (logprobs) line += ",\"logprobs\":" + dump(*logprobs);
        return line + "}\n";
    }
    std::string keep_alive() const { return partial({}, {}); }

  private:
    reply_shape shape_;
    std::string head_;
};

json head(const reply_options & o) { return json{{"model", o.model}, {"created_at", rfc3339_now()}}; }

// done_reason, context (generate) and the timing fields, appended in Ollama's order.
void add_final_fields(json & out, const reply_options & o, const generation_session & s, engine::finish_reason finish,
                      const engine::usage_stats & usage, const std::vector<llama_token> & generated) {
    out["done"] = true;
    out["done_reason"] = finish == engine::finish_reason::length ? "length" : "stop";
    if (o.shape == reply_shape::generate) {
        json ctx = json::array();
        for (llama_token t : s.prompt_tokens(0)) ctx.push_back(t);
        for (llama_token t : generated) ctx.push_back(t);
        out["context"] = std::move(ctx);
    }
    out["total_duration"] = ns_since(o.started);
    out["load_duration"] = static_cast<long long>(s.load_time().count());
    out["prompt_eval_count"] = usage.prompt_tokens;
    out["prompt_eval_duration"] = ns_from_ms(usage.prompt_ms);
    out["eval_count"] = usage.completion_tokens;
    out["eval_duration"] = ns_from_ms(usage.generation_ms);
}

void collect_tokens(const session_event & ev, std::vector<llama_token> & generated) {
    for (const auto & t : ev.tokens) generated.push_back(t.chosen.token);
}

http_response respond_whole(generation_session & s, const reply_options & o, const http_request & req) {
    std::vector<llama_token> generated;
    std::vector<engine::token_choice> choices;
    const common_chat_msg * msg = nullptr;
    engine::finish_reason finish = engine::finish_reason::stop;
    engine::usage_stats usage;
    s.run_whole(req, [&](const session_event & ev) {
        if (ev.kind == session_event::type::delta) {
            collect_tokens(ev, generated);
            if (o.logprobs) choices.insert(choices.end(), ev.tokens.begin(), ev.tokens.end());
            return;
        }
        msg = ev.message;
        finish = ev.finish;
        usage = ev.usage;
    });
    json out = head(o);
    if (o.shape == reply_shape::chat) {
        json m = chat_message(msg->content, msg->reasoning_content);
        if (!msg->tool_calls.empty()) m["tool_calls"] = tool_calls_json(msg->tool_calls);
        out["message"] = std::move(m);
    } else {
        out["response"] = msg->content;
        if (!msg->reasoning_content.empty()) out["thinking"] = msg->reasoning_content;
    }
    add_final_fields(out, o, s, finish, usage, generated);
    if (o.logprobs) out["logprobs"] = logprobs_json(choices);
    return json_response(out);
}

http_response respond_stream(std::shared_ptr<generation_session> s, reply_options o) {
    auto lines = std::make_shared<line_writer>(o);
    return streamed_response("application/x-ndjson", [lines] { return lines->keep_alive(); }, [s, o, lines](stream_writer & w) {
        std::vector<llama_token> generated;
        const common_chat_msg * msg = nullptr;
        engine::finish_reason finish = engine::finish_reason::stop;
        engine::usage_stats usage;
        auto ollama_error = [](const rc::error & e) { return stream_error(dialect::ollama, e); };
        bool finished = s->run_stream(w, ollama_error, [&](const session_event & ev) {
            if (ev.kind == session_event::type::done) {
                msg = ev.message;
                finish = ev.finish;
                usage = ev.usage;
                return true;
            }
            collect_tokens(ev, generated);
            // A line per event that shows something; logprobs travel with the event that produced
            // them even while the parser holds its text back.
            bool with_logprobs = o.logprobs && !ev.tokens.empty();
            if (ev.delta.content.empty() && ev.delta.reasoning.empty() && !with_logprobs) return true;
            json lp = with_logprobs ? logprobs_json(ev.tokens) : json();
            return w.write(lines->partial(ev.delta.content, ev.delta.reasoning, with_logprobs ? &lp : nullptr));
        });
        if (!finished || !msg) return;
        if (o.shape == reply_shape::chat && !msg->tool_calls.empty()) {
            json calls = tool_calls_json(msg->tool_calls);
            if (!w.write(lines->partial({}, {}, nullptr, &calls))) return;
        }
        json last = head(o);
        if (o.shape == reply_shape::chat) last["message"] = chat_message({}, {});
        else last["response"] = "";
        add_final_fields(last, o, *s, finish, usage, generated);
        w.write(ndjson(last));
    });
}

}  // namespace

http_response respond(std::shared_ptr<generation_session> s, reply_options o, const http_request & req) {
    return s->streaming() ? respond_stream(std::move(s), std::move(o)) : respond_whole(*s, o, req);
}

json tool_calls_json(const std::vector<common_chat_tool_call> & calls) {
    json out = json::array();
    for (size_t i = 0; i < calls.size(); ++i) {
        const auto & tc = calls[i];
        // Model output, parsed under the request bounds: nothing deeper than a request may be reaches
        // the (recursive) JSON writer.
        json args = tc.arguments.empty() ? json::object() : parse_json_bounded(tc.arguments).value_or(json());
        if (!args.is_object()) {
            // Ollama's arguments are always an object; a model that wrote something else gets an empty
            // one rather than the OpenAI string shape.
            rc::log::warn("ollama", "tool_arguments_not_object", {{"tool", tc.name}, {"bytes", tc.arguments.size()}});
            args = json::object();
        }
        out.push_back({{"id", tc.id.empty() ? engine::new_tool_call_id(engine::tool_id_style::any) : tc.id},
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
