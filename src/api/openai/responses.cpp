// POST /v1/responses — OpenAI's Responses API, stateless (no `previous_response_id` storage): the
// request is translated into a chat completion (the one internal path to the engine) and the result
// back into a `response` object, or, streamed, into Responses events (`response.created`, …,
// `response.output_text.delta`, …, `response.completed`), each with a sequence_number.
#include <sstream>

#include "api/api_error.h"
#include "api/openai/openai_common.h"
#include "api/openai/openai_routes.h"

namespace rc::api::openai {

namespace {

std::string content_text(const json & content, const char * where) {
    if (content.is_string()) return content.get<std::string>();
    if (!content.is_array()) bad_request(std::string(where) + " content must be a string or an array of parts", "input");
    std::string text;
    for (const auto & part : content) {
        std::string type = part.is_object() ? part.value("type", "") : "";
        if (type != "input_text" && type != "output_text" && type != "text") {
            bad_request(std::string(where) + " content parts must be input_text or output_text (got '" + type + "')", "input");
        }
        text += part.value("text", "");
    }
    return text;
}

// Responses `input` items → chat `messages`.
json chat_messages(const json & body) {
    json messages = json::array();
    if (auto instructions = opt_string(body, "instructions")) messages.push_back({{"role", "system"}, {"content", *instructions}});
    auto it = body.find("input");
    if (it == body.end() || it->is_null()) bad_request("'input' is required", "input");
    if (it->is_string()) {
        messages.push_back({{"role", "user"}, {"content", it->get<std::string>()}});
        return messages;
    }
    if (!it->is_array() || it->empty()) bad_request("'input' must be a string or a non-empty array of items", "input");
    for (const auto & item : *it) {
        if (!item.is_object()) bad_request("'input' items must be objects", "input");
        std::string type = item.value("type", item.contains("role") ? "message" : "");
        if (type == "message") {
            std::string role = item.value("role", "");
            messages.push_back({{"role", role}, {"content", content_text(item.value("content", json()), "message")}});
        } else if (type == "function_call") {
            json call = {{"id", item.value("call_id", "")}, {"type", "function"},
                         {"function", {{"name", item.value("name", "")}, {"arguments", item.value("arguments", "{}")}}}};
            messages.push_back({{"role", "assistant"}, {"content", nullptr}, {"tool_calls", json::array({call})}});
        } else if (type == "function_call_output") {
            json output = item.value("output", json(""));
            messages.push_back({{"role", "tool"}, {"tool_call_id", item.value("call_id", "")},
                                {"content", output.is_string() ? output.get<std::string>() : dump(output)}});
        } else {
            bad_request("'input' item type '" + type + "' is not supported", "input");
        }
    }
    return messages;
}

json chat_body(const json & body) {
    json chat = {{"model", require_string(body, "model")}, {"messages", chat_messages(body)}};
    for (const char * key : {"temperature", "top_p", "seed", "parallel_tool_calls", "top_k", "min_p"}) {
        if (body.contains(key)) chat[key] = body[key];
    }
    if (body.contains("max_output_tokens")) chat["max_tokens"] = body["max_output_tokens"];
    if (auto it = body.find("tools"); it != body.end() && it->is_array()) {
        json tools = json::array();
        for (const auto & t : *it) {  // Responses tools are flat: {type, name, description, parameters}
            if (t.value("type", "") != "function") bad_request("only function tools are supported", "tools");
            tools.push_back({{"type", "function"},
                             {"function", {{"name", t.value("name", "")}, {"description", t.value("description", "")},
                                           {"parameters", t.value("parameters", json::object())}}}});
        }
        chat["tools"] = tools;
    }
    if (auto it = body.find("tool_choice"); it != body.end() && !it->is_null()) {
        chat["tool_choice"] = it->is_object() && it->contains("name")
                                  ? json{{"type", "function"}, {"function", {{"name", (*it)["name"]}}}}
                                  : *it;
    }
    if (auto it = body.find("text"); it != body.end() && it->is_object() && it->contains("format")) {
        const json & f = (*it)["format"];
        std::string type = f.value("type", "text");
        if (type == "json_schema") chat["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"name", f.value("name", "output")}, {"schema", f.value("schema", json::object())}}}};
        else if (type == "json_object") chat["response_format"] = {{"type", "json_object"}};
        else if (type != "text") bad_request("'text.format.type' must be text, json_object or json_schema", "text");
    }
    return chat;
}

json usage_of(const json & chat_usage) {
    int in = chat_usage.value("prompt_tokens", 0), out = chat_usage.value("completion_tokens", 0);
    return {{"input_tokens", in}, {"input_tokens_details", {{"cached_tokens", chat_usage.value("/prompt_tokens_details/cached_tokens"_json_pointer, 0)}}},
            {"output_tokens", out}, {"output_tokens_details", {{"reasoning_tokens", 0}}}, {"total_tokens", in + out}};
}

json message_item(const std::string & id, const std::string & text) {
    return {{"type", "message"}, {"id", id}, {"status", "completed"}, {"role", "assistant"},
            {"content", json::array({{{"type", "output_text"}, {"text", text}, {"annotations", json::array()}}})}};
}

json function_item(const json & call) {
    return {{"type", "function_call"}, {"id", make_id("fc")}, {"call_id", call["id"]}, {"name", call["function"]["name"]},
            {"arguments", call["function"]["arguments"]}, {"status", "completed"}};
}

json response_object(const std::string & id, const json & body, const std::string & status, json output, json usage) {
    json r = {{"id", id}, {"object", "response"}, {"created_at", unix_now()}, {"status", status}, {"model", body.value("model", "")},
              {"output", std::move(output)}, {"parallel_tool_calls", body.value("parallel_tool_calls", true)},
              {"tool_choice", body.value("tool_choice", json("auto"))}, {"tools", body.value("tools", json::array())},
              {"usage", std::move(usage)}, {"error", nullptr}};
    r["incomplete_details"] = status == "incomplete" ? json{{"reason", "max_output_tokens"}} : json(nullptr);
    if (body.contains("instructions")) r["instructions"] = body["instructions"];
    return r;
}

http_response whole(const json & body, const http_response & chat) {
    if (chat.status != 200) return chat;
    json c = json::parse(chat.body);
    const json & choice = c["choices"][0];
    json output = json::array();
    std::string text = choice["message"]["content"].is_string() ? choice["message"]["content"].get<std::string>() : "";
    if (!text.empty() || !choice["message"].contains("tool_calls")) output.push_back(message_item(make_id("msg"), text));
    for (const auto & call : choice["message"].value("tool_calls", json::array())) output.push_back(function_item(call));
    std::string status = choice["finish_reason"] == "length" ? "incomplete" : "completed";
    http_response r;
    r.body = dump(response_object(make_id("resp"), body, status, output, usage_of(c["usage"])));
    return r;
}

// Re-frames the chat SSE stream as Responses events.
http_response streamed(const json & body, http_response chat) {
    if (chat.status != 200 || !chat.stream) return chat;
    http_response r;
    r.content_type = "text/event-stream";
    r.headers.push_back({"Cache-Control", "no-cache"});
    r.stream = [body, inner = chat.stream](stream_sink & sink) {
        const std::string id = make_id("resp"), msg_id = make_id("msg");
        int seq = 0;
        auto event = [&](const std::string & type, json data) {
            data["type"] = type;
            data["sequence_number"] = seq++;
            return sink.write("event: " + type + "\ndata: " + dump(data) + "\n\n");
        };
        std::string text, pending, finish = "stop";
        json calls = json::object(), usage = usage_of(json::object());
        bool text_open = false;
        event("response.created", {{"response", response_object(id, body, "in_progress", json::array(), nullptr)}});
        event("response.in_progress", {{"response", response_object(id, body, "in_progress", json::array(), nullptr)}});
        stream_sink relay;
        relay.alive = sink.alive;
        relay.write = [&](std::string_view chunk) {
            pending.append(chunk);
            size_t end;
            while ((end = pending.find("\n\n")) != std::string::npos) {
                std::string line = pending.substr(0, end);
                pending.erase(0, end + 2);
                if (line.rfind("data: ", 0) != 0 || line == "data: [DONE]") continue;
                json c = json::parse(line.substr(6), nullptr, false);
                if (c.is_discarded()) continue;
                if (c.contains("usage") && c["usage"].is_object()) usage = usage_of(c["usage"]);
                if (!c.contains("choices") || c["choices"].empty()) continue;
                const json & ch = c["choices"][0];
                if (ch.contains("finish_reason") && ch["finish_reason"].is_string()) finish = ch["finish_reason"];
                const json & delta = ch.value("delta", json::object());
                if (delta.contains("content") && delta["content"].is_string() && !delta["content"].get<std::string>().empty()) {
                    if (!text_open) {
                        json item = {{"type", "message"}, {"id", msg_id}, {"status", "in_progress"}, {"role", "assistant"}};
                        item["content"] = json::array();
                        json part = {{"type", "output_text"}, {"text", ""}};
                        part["annotations"] = json::array();
                        json added = {{"output_index", 0}};
                        added["item"] = item;
                        json part_added = {{"item_id", msg_id}, {"output_index", 0}, {"content_index", 0}};
                        part_added["part"] = part;
                        event("response.output_item.added", added);
                        event("response.content_part.added", part_added);
                        text_open = true;
                    }
                    text += delta["content"].get<std::string>();
                    if (!event("response.output_text.delta", {{"item_id", msg_id}, {"output_index", 0}, {"content_index", 0}, {"delta", delta["content"]}})) return false;
                }
                for (const auto & tc : delta.value("tool_calls", json::array())) {
                    std::string idx = std::to_string(tc.value("index", 0));
                    json & call = calls[idx];
                    if (tc.contains("id")) call["id"] = tc["id"];
                    if (tc.contains("function") && tc["function"].contains("name")) call["function"]["name"] = tc["function"]["name"];
                    call["function"]["arguments"] = call["function"].value("arguments", "") + tc["function"].value("arguments", "");
                }
            }
            return sink.alive();
        };
        inner(relay);
        if (!sink.alive()) return;
        json output = json::array();
        if (text_open || calls.empty()) {
            event("response.output_text.done", {{"item_id", msg_id}, {"output_index", 0}, {"content_index", 0}, {"text", text}});
            json part_done = {{"item_id", msg_id}, {"output_index", 0}, {"content_index", 0}};
            part_done["part"] = message_item(msg_id, text)["content"][0];
            event("response.content_part.done", part_done);
            output.push_back(message_item(msg_id, text));
            event("response.output_item.done", {{"output_index", 0}, {"item", output.back()}});
        }
        for (const auto & [idx, call] : calls.items()) {
            output.push_back(function_item(call));
            event("response.output_item.added", {{"output_index", output.size() - 1}, {"item", output.back()}});
            event("response.function_call_arguments.done", {{"item_id", output.back()["id"]}, {"output_index", output.size() - 1}, {"arguments", call["function"]["arguments"]}});
            event("response.output_item.done", {{"output_index", output.size() - 1}, {"item", output.back()}});
        }
        std::string status = finish == "length" ? "incomplete" : "completed";
        event(status == "completed" ? "response.completed" : "response.incomplete", {{"response", response_object(id, body, status, output, usage)}});
    };
    return r;
}

}  // namespace

route responses_route(api_context & ctx) {
    return {"POST", "/v1/responses", [&ctx](const http_request & req) {
                json body = parse_body(req);
                if (body.contains("previous_response_id") && !body["previous_response_id"].is_null())
                    bad_request("'previous_response_id' is not supported: this server keeps no response state; send the whole input", "previous_response_id");
                bool stream = opt_bool(body, "stream").value_or(false);
                json chat = chat_body(body);
                if (stream) {
                    chat["stream"] = true;
                    chat["stream_options"] = {{"include_usage", true}};
                }
                http_request inner = req;
                inner.path = "/v1/chat/completions";
                inner.body = dump(chat);
                http_response r = chat_completions_route(ctx).handler(inner);
                return stream ? streamed(body, std::move(r)) : whole(body, r);
            }};
}

}  // namespace rc::api::openai
