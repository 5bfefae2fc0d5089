// POST /v1/chat/completions — OpenAI chat, plain and streamed (SSE), with tools, response_format,
// logprobs and n. The chat template, tool-call grammar and output parsing are llama.cpp's.
#include <json.h>

#include "api/api_error.h"
#include "api/generation_pump.h"
#include "api/openai/openai_common.h"
#include "api/openai/openai_routes.h"
#include "engine/chat_format.h"

namespace rc::api::openai {

namespace {

common_json to_common(const json & j) { return common_json::parse(dump(j)); }

void validate_messages(const json & messages) {
    if (!messages.is_array()) bad_request("'messages' must be an array", "messages");
    if (messages.empty()) bad_request("'messages' must not be empty", "messages");
    for (size_t i = 0; i < messages.size(); ++i) {
        const auto & m = messages[i];
        std::string where = "messages[" + std::to_string(i) + "]";
        if (!m.is_object()) bad_request(where + " must be an object", "messages");
        auto role = m.find("role");
        if (role == m.end() || !role->is_string()) bad_request(where + ".role must be a string", "messages");
        std::string r = role->get<std::string>();
        if (r != "system" && r != "developer" && r != "user" && r != "assistant" && r != "tool")
            bad_request(where + ".role '" + r + "' is not one of system, developer, user, assistant, tool", "messages");
        auto content = m.find("content");
        bool has_content = content != m.end() && !content->is_null();
        if (has_content && !content->is_string() && !content->is_array())
            bad_request(where + ".content must be a string or an array of content parts", "messages");
        if (!has_content && !(r == "assistant" && m.contains("tool_calls")))
            bad_request(where + ".content is required", "messages");
    }
}

engine::chat_input read_chat_input(const json & body) {
    engine::chat_input in;
    json messages = body.contains("messages") ? body.at("messages") : json();
    if (messages.is_null()) bad_request("'messages' is required", "messages");
    validate_messages(messages);
    // OpenAI's "developer" role is the system role for every template we render.
    for (auto & m : messages) {
        if (m["role"] == "developer") m["role"] = "system";
    }
    try {
        in.messages = common_chat_msgs_parse_oaicompat(to_common(messages));
    } catch (const std::exception & e) {
        bad_request(std::string("'messages': ") + e.what(), "messages");
    }

    if (auto it = body.find("tools"); it != body.end() && !it->is_null()) {
        if (!it->is_array()) bad_request("'tools' must be an array", "tools");
        try {
            in.tools = common_chat_tools_parse_oaicompat(to_common(*it));
        } catch (const std::exception & e) {
            bad_request(std::string("'tools': ") + e.what(), "tools");
        }
    }
    if (auto it = body.find("tool_choice"); it != body.end() && !it->is_null()) {
        if (it->is_string()) {
            std::string c = it->get<std::string>();
            if (c != "auto" && c != "none" && c != "required") bad_request("'tool_choice' must be auto, none, required or an object", "tool_choice");
            in.tool_choice = common_chat_tool_choice_parse_oaicompat(c);
        } else if (it->is_object()) {
            // {"type":"function","function":{"name":"x"}}: only that tool, and it must be called.
            std::string name = it->value("/function/name"_json_pointer, std::string());
            if (name.empty()) bad_request("'tool_choice.function.name' is required", "tool_choice");
            std::erase_if(in.tools, [&](const common_chat_tool & t) { return t.name != name; });
            if (in.tools.empty()) bad_request("'tool_choice' names a tool that is not in 'tools': " + name, "tool_choice");
            in.tool_choice = COMMON_CHAT_TOOL_CHOICE_REQUIRED;
        } else {
            bad_request("'tool_choice' must be a string or an object", "tool_choice");
        }
    }
    if (auto v = opt_bool(body, "parallel_tool_calls")) in.parallel_tool_calls = *v;

    if (auto it = body.find("response_format"); it != body.end() && !it->is_null()) {
        if (!it->is_object()) bad_request("'response_format' must be an object", "response_format");
        std::string type = it->value("type", std::string());
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
    if (auto effort = opt_string(body, "reasoning_effort"); effort && *effort == "none") in.enable_thinking = false;
    return in;
}

std::string new_tool_call_id() { return make_id("call"); }

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

json delta_json(const common_chat_msg_diff & d) {
    json delta = json::object();
    if (!d.reasoning_content_delta.empty()) delta["reasoning_content"] = d.reasoning_content_delta;
    if (!d.content_delta.empty()) delta["content"] = d.content_delta;
    if (d.tool_call_index != std::string::npos) {
        json tc = {{"index", d.tool_call_index}};
        if (!d.tool_call_delta.id.empty()) {
            tc["id"] = d.tool_call_delta.id;
            tc["type"] = "function";
        }
        json fn = json::object();
        if (!d.tool_call_delta.name.empty()) fn["name"] = d.tool_call_delta.name;
        fn["arguments"] = d.tool_call_delta.arguments;
        tc["function"] = fn;
        delta["tool_calls"] = json::array({tc});
    }
    return delta;
}

const char * finish_name(const engine::generation_event & done, const common_chat_msg & msg) {
    if (done.finish == engine::finish_reason::length) return "length";
    if (!msg.tool_calls.empty()) return "tool_calls";
    return "stop";
}

// Incremental parse of one choice's output into message deltas.
struct choice_state {
    std::string text;
    common_chat_msg msg;
    std::vector<std::string> tool_ids;
    json logprobs = json::array();

    std::vector<common_chat_msg_diff> update(const std::string & piece, bool partial, const common_chat_parser_params & parser) {
        text += piece;
        common_chat_msg next = engine::parse_chat_output(text, partial, parser);
        if (next.empty() && partial) return {};
        next.set_tool_call_ids(tool_ids, new_tool_call_id);
        auto diffs = common_chat_msg_diff::compute_diffs(msg, next);
        msg = std::move(next);
        return diffs;
    }
};

struct chat_job {
    std::shared_ptr<engine::engine> eng;
    engine::chat_prompt prompt;
    std::vector<std::shared_ptr<engine::request_channel>> channels;
    bool logprobs = false;
    std::string model_name;
    std::optional<generation_meter> meter;  // set right before the first submit

    ~chat_job() {
        // A client that left, or an error on one choice, must not leave the others generating.
        for (auto & ch : channels) {
            if (!ch->finished()) ch->cancel();
        }
    }
};

http_response respond_whole(chat_job & job, const http_request & req) {
    json choices = json::array();
    engine::usage_stats total;
    for (size_t i = 0; i < job.channels.size(); ++i) {
        choice_state st;
        auto done = pump(*job.channels[i], req.client_gone ? [&] { return !req.client_gone(); } : std::function<bool()>(),
                         [&](const engine::generation_event & ev) {
                             st.text += ev.text;
                             if (job.logprobs) {
                                 for (const auto & t : ev.tokens) st.logprobs.push_back(chat_logprob_json(t));
                             }
                             return true;
                         },
                         *job.meter);
        if (done.kind == engine::generation_event::type::error) raise_event_error(done.error_code, done.error_message);
        common_chat_msg msg = engine::parse_chat_output(st.text, false, job.prompt.parser);
        msg.set_tool_call_ids(st.tool_ids, new_tool_call_id);
        json choice = {{"index", i}, {"message", message_json(msg)}, {"finish_reason", finish_name(done, msg)}};
        choice["logprobs"] = job.logprobs ? json{{"content", st.logprobs}} : json(nullptr);
        choices.push_back(choice);
        total.prompt_tokens = done.usage.prompt_tokens;
        total.cached_tokens = done.usage.cached_tokens;
        total.completion_tokens += done.usage.completion_tokens;
    }
    json out = {{"id", make_id("chatcmpl")}, {"object", "chat.completion"}, {"created", unix_now()},
                {"model", job.model_name}, {"system_fingerprint", "rustycage"}, {"choices", choices}, {"usage", usage_json(total)}};
    http_response r;
    r.body = dump(out);
    return r;
}

http_response respond_stream(std::shared_ptr<chat_job> job, bool include_usage) {
    http_response r;
    r.content_type = "text/event-stream";
    r.headers.push_back({"Cache-Control", "no-cache"});
    r.stream = [job, include_usage](stream_sink & sink) {
        const std::string id = make_id("chatcmpl");
        const long long created = unix_now();
        auto chunk = [&](json choices) {
            return json{{"id", id}, {"object", "chat.completion.chunk"}, {"created", created}, {"model", job->model_name},
                        {"system_fingerprint", "rustycage"}, {"choices", std::move(choices)}};
        };
        auto send = [&](const json & j) { return sink.write(sse(j)); };
        engine::usage_stats total;
        bool alive = true;
        for (size_t i = 0; i < job->channels.size() && alive; ++i) {
            alive = send(chunk(json::array({{{"index", i}, {"delta", {{"role", "assistant"}, {"content", ""}}}, {"logprobs", nullptr}, {"finish_reason", nullptr}}})));
            choice_state st;
            auto emit = [&](const std::vector<common_chat_msg_diff> & diffs, const std::vector<engine::token_choice> & toks) {
                bool first = true;
                for (const auto & d : diffs) {
                    json c = {{"index", i}, {"delta", delta_json(d)}, {"finish_reason", nullptr}};
                    json lp = nullptr;
                    if (job->logprobs && first && !toks.empty()) {
                        lp = json{{"content", json::array()}};
                        for (const auto & t : toks) lp["content"].push_back(chat_logprob_json(t));
                    }
                    c["logprobs"] = lp;
                    first = false;
                    if (!send(chunk(json::array({c})))) return false;
                }
                return true;
            };
            auto done = pump(*job->channels[i], sink.alive, [&](const engine::generation_event & ev) {
                alive = alive && emit(st.update(ev.text, true, job->prompt.parser), ev.tokens);
                return alive;
            }, *job->meter);
            if (!alive) break;
            if (done.kind == engine::generation_event::type::error) {
                send(json{{"error", {{"message", done.error_message}, {"type", "server_error"}, {"param", nullptr}, {"code", done.error_code}}}});
                alive = false;
                break;
            }
            alive = emit(st.update("", false, job->prompt.parser), {});
            alive = alive && send(chunk(json::array({{{"index", i}, {"delta", json::object()}, {"logprobs", nullptr}, {"finish_reason", finish_name(done, st.msg)}}})));
            total.prompt_tokens = done.usage.prompt_tokens;
            total.cached_tokens = done.usage.cached_tokens;
            total.completion_tokens += done.usage.completion_tokens;
        }
        if (!alive) return;
        if (include_usage) {
            json u = chunk(json::array());
            u["usage"] = usage_json(total);
            send(u);
        }
        sink.write("data: [DONE]\n\n");
    };
    return r;
}

http_response handle(api_context & ctx, const http_request & req) {
    json body = parse_body(req);
    auto eng = acquire_model(ctx, body);
    const auto & m = eng->model();
    auto job = std::make_shared<chat_job>();
    job->eng = eng;
    job->model_name = require_string(body, "model");

    engine::generation_request base;
    read_generation_params(body, ctx, m, base);
    int n = read_n(body);
    job->logprobs = opt_bool(body, "logprobs").value_or(false);
    auto top = opt_int(body, "top_logprobs", 0, 20);
    if (top && !job->logprobs) bad_request("'top_logprobs' requires 'logprobs': true", "top_logprobs");
    base.logprobs_top = job->logprobs ? static_cast<int>(top.value_or(0)) : -1;
    bool stream = opt_bool(body, "stream").value_or(false);
    bool include_usage = false;
    if (auto it = body.find("stream_options"); it != body.end() && !it->is_null()) {
        if (!it->is_object()) bad_request("'stream_options' must be an object", "stream_options");
        include_usage = opt_bool(*it, "include_usage").value_or(false);
    }

    auto rendered = engine::render_chat(m, read_chat_input(body));
    if (!rendered) raise(rendered.err());
    job->prompt = std::move(rendered.value());
    base.prompt = m.tokenize(job->prompt.text, true, true);
    base.grammar = job->prompt.grammar;
    for (const auto & s : job->prompt.additional_stops) base.stop.push_back(s);

    job->meter.emplace(ctx, job->model_name);
    for (int i = 0; i < n; ++i) {
        engine::generation_request r = base;
        if (r.sampling.seed && i > 0) r.sampling.seed = *r.sampling.seed + static_cast<uint32_t>(i);
        auto ch = eng->submit(std::move(r));
        if (!ch) raise(ch.err());
        job->channels.push_back(ch.value());
    }
    return stream ? respond_stream(job, include_usage) : respond_whole(*job, req);
}

}  // namespace

route chat_completions_route(api_context & ctx) {
    return {"POST", "/v1/chat/completions", [&ctx](const http_request & req) { return handle(ctx, req); }};
}

}  // namespace rc::api::openai
