// POST /v1/chat/completions — OpenAI chat, plain and streamed (SSE), with tools, response_format,
// logprobs and n. The body becomes a generation_input; the session's events become chat.completion
// objects or chunks. n > 1 streams interleaved, as OpenAI does: each chunk carries one choice.
#include "http/api_error.h"
#include "api/chat_messages.h"
#include "api/generation_session.h"
#include "api/openai/openai_common.h"
#include "api/openai/openai_routes.h"
#include "api/reasoning_controls.h"
#include "http/stream_writer.h"
#include "util/safe_quote.h"

namespace rc::api::openai {
using namespace rc::http;  // written against the HTTP shell (src/http)

engine::chat_input read_chat(const json & body) {
    engine::chat_input in;
    auto messages = body.find("messages");
    if (messages == body.end() || messages->is_null()) bad_request("'messages' is required", "messages");
    in.messages = read_chat_messages(*messages);
    if (auto it = body.find("tools"); it != body.end()) in.tools = read_chat_tools(*it);
    if (auto it = body.find("tool_choice"); it != body.end() && !it->is_null()) {
        if (it->is_string()) {
            std::string c = it->get<std::string>();
            if (c != "auto" && c != "none" && c != "required") bad_request("'tool_choice' must be auto, none, required or an object", "tool_choice");
            if (c == "required" && in.tools.empty()) bad_request("'tool_choice' is required but 'tools' is empty: there is no tool to call", "tool_choice");
            in.tool_choice = common_chat_tool_choice_parse_oaicompat(c);
        } else if (it->is_object()) {
            // {"type":"function","function":{"name":"x"}}: only that tool, and it must be called.
            const json * fn = it->contains("function") && (*it)["function"].is_object() ? &(*it)["function"] : nullptr;
            auto name = fn ? opt_string(*fn, "name") : std::nullopt;
            if (!name || name->empty()) bad_request("'tool_choice.function.name' is required", "tool_choice");
            std::erase_if(in.tools, [&](const common_chat_tool & t) { return t.name != *name; });
            if (in.tools.empty()) bad_request("'tool_choice' names a tool that is not in 'tools': " + safe_quote(*name), "tool_choice");
            in.tool_choice = COMMON_CHAT_TOOL_CHOICE_REQUIRED;
        } else {
            bad_request("'tool_choice' must be a string or an object", "tool_choice");
        }
    }
    if (auto v = opt_bool(body, "parallel_tool_calls")) in.parallel_tool_calls = *v;

    if (auto it = body.find("response_format"); it != body.end() && !it->is_null()) {
        if (!it->is_object()) bad_request("'response_format' must be an object", "response_format");
        std::string type = opt_string(*it, "type").value_or("");
        if (type == "json_object") {
            in.json_schema = it->contains("schema") ? dump(it->at("schema")) : R"({"type":"object"})";
        } else if (type == "json_schema") {
            const json * schema = nullptr;
            if (it->contains("json_schema") && it->at("json_schema").is_object() && it->at("json_schema").contains("schema"))
                schema = &it->at("json_schema").at("schema");
            if (!schema || !schema->is_object()) bad_request("'response_format.json_schema.schema' must be an object", "response_format");
            in.json_schema = dump(*schema);
        } else if (type != "text" && !type.empty()) {
            bad_request("'response_format.type' must be text, json_object or json_schema", "response_format");
        }
    }
    read_reasoning_controls(body, in);
    return in;
}

namespace {

json message_json(const common_chat_msg & msg) {
    json m = {{"role", "assistant"}};
    m["content"] = msg.content.empty() && !msg.tool_calls.empty() ? json(nullptr) : json(msg.content);
    if (!msg.reasoning_content.empty()) m["reasoning_content"] = msg.reasoning_content;
    if (!msg.tool_calls.empty()) {
        json calls = json::array();
        for (const auto & tc : msg.tool_calls) {
            calls.push_back({{"id", tc.id}, {"type", "function"}, {"function", {{"name", tc.name}, {"arguments", tc.arguments}}}});
        }
        m["tool_calls"] = calls;
    }
    return m;
}

json delta_json(const output_delta & d) {
    json delta = json::object();
    if (!d.reasoning.empty()) delta["reasoning_content"] = d.reasoning;
    if (!d.content.empty()) delta["content"] = d.content;
    if (!d.tool_calls.empty()) {
        json calls = json::array();
        for (const auto & t : d.tool_calls) {
            json tc = {{"index", t.index}};
            if (!t.id.empty()) {
                tc["id"] = t.id;
                tc["type"] = "function";
            }
            json fn = json::object();
            if (!t.name.empty()) fn["name"] = t.name;
            fn["arguments"] = t.arguments;
            tc["function"] = std::move(fn);
            calls.push_back(std::move(tc));
        }
        delta["tool_calls"] = std::move(calls);
    }
    return delta;
}

const char * finish_name(engine::finish_reason finish, const common_chat_msg & msg) {
    if (finish == engine::finish_reason::length) return "length";
    if (!msg.tool_calls.empty()) return "tool_calls";
    return "stop";
}

struct chat_reply {
    std::string model;  // as the client named it
    bool logprobs = false;
    bool include_usage = false;
};

void add_logprobs(json & into, const std::vector<engine::token_choice> & tokens) {
    for (const auto & t : tokens) into.push_back(chat_logprob_json(t));
}

http_response respond_whole(generation_session & s, const chat_reply & reply, const http_request & req) {
    std::vector<json> choices(s.choices());
    std::vector<json> logprobs(s.choices(), json::array());
    engine::usage_stats total;
    s.run_whole(req, [&](const session_event & ev) {
        if (ev.kind == session_event::type::delta) {
            if (reply.logprobs) add_logprobs(logprobs[ev.choice], ev.tokens);
            return;
        }
        json c = {{"index", ev.choice}, {"message", message_json(*ev.message)}, {"finish_reason", finish_name(ev.finish, *ev.message)}};
        c["logprobs"] = reply.logprobs ? json{{"content", std::move(logprobs[ev.choice])}} : json(nullptr);
        choices[ev.choice] = std::move(c);
        total.prompt_tokens = ev.usage.prompt_tokens;  // every choice has the same prompt
        total.cached_tokens = ev.usage.cached_tokens;
        total.completion_tokens += ev.usage.completion_tokens;
    });
    json out = {{"id", make_id("chatcmpl")}, {"object", "chat.completion"}, {"created", unix_now()},
                {"model", reply.model}, {"system_fingerprint", "rustycage"}, {"choices", std::move(choices)}, {"usage", usage_json(total)}};
    http_response r;
    r.body = dump(out);
    return r;
}

http_response respond_stream(std::shared_ptr<generation_session> s, chat_reply reply) {
    return streamed_response("text/event-stream", sse_keep_alive, [s, reply](stream_writer & w) {
        const chunk_framing chunks(make_id("chatcmpl"), "chat.completion.chunk", unix_now(), reply.model, true);
        for (size_t i = 0; i < s->choices(); ++i) {
            if (!w.write(chunks.choice({{"index", i}, {"delta", {{"role", "assistant"}, {"content", ""}}}, {"logprobs", nullptr}, {"finish_reason", nullptr}})))
                return;
        }
        // Logprobs of tokens whose text the parser holds back travel with the next delta shown.
        std::vector<json> pending_logprobs(s->choices(), json::array());
        auto logprobs_of = [&](size_t i) {
            if (!reply.logprobs || pending_logprobs[i].empty()) return json(nullptr);
            json lp = {{"content", std::move(pending_logprobs[i])}};
            pending_logprobs[i] = json::array();
            return lp;
        };
        engine::usage_stats total;
        auto openai_error = [](const rc::error & e) { return stream_error(dialect::openai, e); };
        bool finished = s->run_stream(w, openai_error, [&](const session_event & ev) {
            if (ev.kind == session_event::type::delta) {
                if (reply.logprobs) add_logprobs(pending_logprobs[ev.choice], ev.tokens);
                if (ev.delta.empty()) return true;
                return w.write(chunks.choice({{"index", ev.choice}, {"delta", delta_json(ev.delta)}, {"logprobs", logprobs_of(ev.choice)}, {"finish_reason", nullptr}}));
            }
            total.prompt_tokens = ev.usage.prompt_tokens;
            total.cached_tokens = ev.usage.cached_tokens;
            total.completion_tokens += ev.usage.completion_tokens;
            return w.write(chunks.choice({{"index", ev.choice}, {"delta", json::object()}, {"logprobs", logprobs_of(ev.choice)},
                                          {"finish_reason", finish_name(ev.finish, *ev.message)}}));
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
    in.task = "chat";
    in.prompt_field = "messages";
    in.schema_field = "response_format";
    in.chat = read_chat(body);
    read_sampling(body, in.params);
    in.params.max_tokens = read_max_tokens(body, ctx, {"max_completion_tokens", "max_tokens"});
    in.n = read_n(body);
    chat_reply reply{in.model, opt_bool(body, "logprobs").value_or(false), read_include_usage(body)};
    auto top = opt_int(body, "top_logprobs", 0, 20);
    if (top && !reply.logprobs) bad_request("'top_logprobs' requires 'logprobs': true", "top_logprobs");
    in.params.logprobs_top = reply.logprobs ? static_cast<int>(top.value_or(0)) : -1;
    in.stream = opt_bool(body, "stream").value_or(false);

    const auto entry = find_model_entry(ctx, in.model);  // before `in` moves into the session
    auto session = generation_session::start(ctx, entry, std::move(in), req.client_gone);
    return session->streaming() ? respond_stream(std::move(session), std::move(reply)) : respond_whole(*session, reply, req);
}

}  // namespace

route chat_completions_route(api_context & ctx) {
    return {"POST", "/v1/chat/completions", [&ctx](const http_request & req) { return handle(ctx, req); }};
}

}  // namespace rc::api::openai
