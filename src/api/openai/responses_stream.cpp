#include "api/openai/responses_stream.h"

#include "api/openai/openai_common.h"

namespace rc::api::openai {

namespace {

json usage_of(const engine::usage_stats & u) {
    return {{"input_tokens", u.prompt_tokens}, {"input_tokens_details", {{"cached_tokens", u.cached_tokens}}},
            {"output_tokens", u.completion_tokens}, {"output_tokens_details", {{"reasoning_tokens", 0}}},
            {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

json message_item(const std::string & id, const std::string & text) {
    return {{"type", "message"}, {"id", id}, {"status", "completed"}, {"role", "assistant"},
            {"content", json::array({{{"type", "output_text"}, {"text", text}, {"annotations", json::array()}}})}};
}

json function_item(const common_chat_tool_call & call) {
    return {{"type", "function_call"}, {"id", make_id("fc")}, {"call_id", call.id}, {"name", call.name},
            {"arguments", call.arguments}, {"status", "completed"}};
}

json response_object(const std::string & id, const response_echo & echo, const std::string & status, json output, json usage, json error = nullptr) {
    json r = {{"id", id}, {"object", "response"}, {"created_at", unix_now()}, {"status", status}, {"model", echo.model},
              {"output", std::move(output)}, {"parallel_tool_calls", echo.parallel_tool_calls},
              {"tool_choice", echo.tool_choice}, {"tools", echo.tools},
              {"usage", std::move(usage)}, {"error", std::move(error)}};
    r["incomplete_details"] = status == "incomplete" ? json{{"reason", "max_output_tokens"}} : json(nullptr);
    if (echo.instructions) r["instructions"] = *echo.instructions;
    return r;
}

const char * status_of(engine::finish_reason f) { return f == engine::finish_reason::length ? "incomplete" : "completed"; }

}  // namespace

json response_json(const response_echo & echo, engine::finish_reason finish, const common_chat_msg & reply, const engine::usage_stats & usage) {
    json output = json::array();
    if (!reply.content.empty() || reply.tool_calls.empty()) output.push_back(message_item(make_id("msg"), reply.content));
    for (const auto & call : reply.tool_calls) output.push_back(function_item(call));
    return response_object(make_id("resp"), echo, status_of(finish), std::move(output), usage_of(usage));
}

responses_stream::responses_stream(response_echo echo) : echo_(std::move(echo)), id_(make_id("resp")), msg_id_(make_id("msg")) {}

std::string responses_stream::event(const char * type, json data) {
    data["type"] = type;
    data["sequence_number"] = seq_++;
    return std::string("event: ") + type + "\ndata: " + dump(data) + "\n\n";
}

std::string responses_stream::start() {
    auto in_progress = [&] { return json{{"response", response_object(id_, echo_, "in_progress", json::array(), nullptr)}}; };
    std::string out = event("response.created", in_progress());
    return out + event("response.in_progress", in_progress());
}

std::string responses_stream::on_event(const session_event & ev) {
    switch (ev.kind) {
        case session_event::type::delta: {
            // Reasoning and call fragments are not shown: the calls come whole at the end.
            if (ev.delta.content.empty()) return {};
            std::string out;
            if (!text_open_) {
                text_open_ = true;
                json item = {{"type", "message"}, {"id", msg_id_}, {"status", "in_progress"}, {"role", "assistant"}, {"content", json::array()}};
                json part = {{"type", "output_text"}, {"text", ""}, {"annotations", json::array()}};
                out += event("response.output_item.added", {{"output_index", 0}, {"item", std::move(item)}});
                out += event("response.content_part.added", {{"item_id", msg_id_}, {"output_index", 0}, {"content_index", 0}, {"part", std::move(part)}});
            }
            text_ += ev.delta.content;
            return out + event("response.output_text.delta", {{"item_id", msg_id_}, {"output_index", 0}, {"content_index", 0}, {"delta", ev.delta.content}});
        }
        case session_event::type::done:
            reply_ = *ev.message;
            finish_ = ev.finish;
            usage_ = ev.usage;
            return {};
        case session_event::type::error: return fail(ev.error);
        case session_event::type::idle: return {};
    }
    return {};
}

std::string responses_stream::fail(const rc::error & err) {
    failed_ = true;
    json error = {{"code", errc_name(err.code)}, {"message", err.message}};
    return event("response.failed", {{"response", response_object(id_, echo_, "failed", json::array(), usage_of(usage_), std::move(error))}});
}

std::string responses_stream::finish() {
    std::string out;
    json output = json::array();
    if (text_open_ || reply_.tool_calls.empty()) {
        // The client holds the streamed text; the final parse may only have extended it.
        if (reply_.content.size() > text_.size() && reply_.content.compare(0, text_.size(), text_) == 0) text_ = reply_.content;
        json item = message_item(msg_id_, text_);
        out += event("response.output_text.done", {{"item_id", msg_id_}, {"output_index", 0}, {"content_index", 0}, {"text", text_}});
        out += event("response.content_part.done", {{"item_id", msg_id_}, {"output_index", 0}, {"content_index", 0}, {"part", item["content"][0]}});
        out += event("response.output_item.done", {{"output_index", 0}, {"item", item}});
        output.push_back(std::move(item));
    }
    for (const auto & call : reply_.tool_calls) {
        json item = function_item(call);
        const size_t index = output.size();
        out += event("response.output_item.added", {{"output_index", index}, {"item", item}});
        out += event("response.function_call_arguments.done", {{"item_id", item["id"]}, {"output_index", index}, {"arguments", call.arguments}});
        out += event("response.output_item.done", {{"output_index", index}, {"item", item}});
        output.push_back(std::move(item));
    }
    const std::string status = status_of(finish_);
    return out + event(status == "completed" ? "response.completed" : "response.incomplete",
                       {{"response", response_object(id_, echo_, status, std::move(output), usage_of(usage_))}});
}

}  // namespace rc::api::openai
