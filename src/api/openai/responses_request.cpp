#include "api/openai/responses_request.h"

#include "api/chat_messages.h"
#include "api/openai/openai_common.h"
#include "api/reasoning_controls.h"
#include "http/api_error.h"
#include "util/safe_quote.h"

namespace rc::api::openai {
using namespace rc::http;  // written against the HTTP shell (src/http)

namespace {

std::string at(const std::string & field, size_t i) { return field + "[" + std::to_string(i) + "]"; }

// The string `key` of `obj`, or `fallback` when absent; 400 naming `where.key` on another type.
std::string string_field(const json & obj, const char * key, const std::string & where, const std::string & fallback = {}) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return fallback;
    if (!it->is_string()) bad_request(where + "." + key + " must be a string", "input");
    return it->get<std::string>();
}

std::string content_text(const json & content, const std::string & where) {
    if (content.is_string()) return content.get<std::string>();
    if (!content.is_array()) bad_request(where + " must be a string or an array of content parts", "input");
    std::string text;
    for (size_t i = 0; i < content.size(); ++i) {
        const json & part = content[i];
        const std::string here = at(where, i);
        if (!part.is_object()) bad_request(here + " must be an object", "input");
        std::string type = string_field(part, "type", here);
        if (type != "input_text" && type != "output_text" && type != "text")
            bad_request(here + ".type must be input_text or output_text (got " + safe_quote(type) + ")", "input");
        text += string_field(part, "text", here);
    }
    return text;
}

common_chat_msg message(const std::string & role, std::string content) {
    common_chat_msg m;
    m.role = role;
    m.content = std::move(content);
    return m;
}

// `instructions` and `input` (a string, or message / function_call / function_call_output items).
std::vector<common_chat_msg> read_messages(const json & body) {
    std::vector<common_chat_msg> out;
    if (auto instructions = opt_string(body, "instructions")) out.push_back(message("system", *instructions));
    auto it = body.find("input");
    if (it == body.end() || it->is_null()) bad_request("'input' is required", "input");
    if (it->is_string()) {
        out.push_back(message("user", it->get<std::string>()));
        return out;
    }
    if (!it->is_array() || it->empty()) bad_request("'input' must be a string or a non-empty array of items", "input");
    if (it->size() > max_chat_messages)
        bad_request("'input' has " + std::to_string(it->size()) + " items; at most " + std::to_string(max_chat_messages) + " are accepted", "input");
    for (size_t i = 0; i < it->size(); ++i) {
        const json & item = (*it)[i];
        const std::string where = at("input", i);
        if (!item.is_object()) bad_request(where + " must be an object", "input");
        std::string type = string_field(item, "type", where, item.contains("role") ? "message" : "");
        if (type == "message") {
            std::string role = string_field(item, "role", where);
            if (role == "developer") role = "system";
            if (role != "system" && role != "user" && role != "assistant")
                bad_request(where + ".role must be system, developer, user or assistant (got " + safe_quote(role) + ")", "input");
            auto content = item.find("content");
            out.push_back(message(role, content == item.end() || content->is_null() ? std::string() : content_text(*content, where + ".content")));
        } else if (type == "function_call") {
            common_chat_tool_call call;
            call.id = string_field(item, "call_id", where);
            call.name = string_field(item, "name", where);
            if (call.name.empty()) bad_request(where + ".name is required", "input");
            call.arguments = string_field(item, "arguments", where, "{}");
            check_json_text(call.arguments, where + ".arguments");
            common_chat_msg m = message("assistant", "");
            m.tool_calls.push_back(std::move(call));
            out.push_back(std::move(m));
        } else if (type == "function_call_output") {
            common_chat_msg m;
            m.role = "tool";
            m.tool_call_id = string_field(item, "call_id", where);
            auto output = item.find("output");
            m.content = output == item.end() || output->is_null() ? std::string() : output->is_string() ? output->get<std::string>() : dump(*output);
            out.push_back(std::move(m));
        } else {
            bad_request(where + ".type " + safe_quote(type) + " is not supported (message, function_call, function_call_output)", "input");
        }
    }
    return out;
}

// Responses tools are flat: {type:"function", name, description, parameters}.
std::vector<common_chat_tool> read_tools(const json & body) {
    std::vector<common_chat_tool> out;
    auto it = body.find("tools");
    if (it == body.end() || it->is_null()) return out;
    if (!it->is_array()) bad_request("'tools' must be an array", "tools");
    if (it->size() > max_chat_tools)
        bad_request("'tools' has " + std::to_string(it->size()) + " tools; at most " + std::to_string(max_chat_tools) + " are accepted", "tools");
    for (size_t i = 0; i < it->size(); ++i) {
        const json & t = (*it)[i];
        const std::string where = at("tools", i);
        if (!t.is_object()) bad_request(where + " must be an object", "tools");
        if (opt_string(t, "type").value_or("") != "function") bad_request(where + ": only function tools are supported", "tools");
        common_chat_tool tool;
        tool.name = opt_string(t, "name").value_or("");
        if (tool.name.empty()) bad_request(where + ".name is required", "tools");
        tool.description = opt_string(t, "description").value_or("");
        auto params = t.find("parameters");
        if (params != t.end() && !params->is_null() && !params->is_object()) bad_request(where + ".parameters must be an object", "tools");
        tool.parameters = params == t.end() || params->is_null() ? "{}" : dump(*params);
        out.push_back(std::move(tool));
    }
    return out;
}

void read_tool_choice(const json & body, engine::chat_input & in) {
    auto it = body.find("tool_choice");
    if (it == body.end() || it->is_null()) return;
    if (it->is_string()) {
        std::string c = it->get<std::string>();
        if (c != "auto" && c != "none" && c != "required") bad_request("'tool_choice' must be auto, none, required or an object", "tool_choice");
        if (c == "required" && in.tools.empty()) bad_request("'tool_choice' is required but 'tools' is empty: there is no tool to call", "tool_choice");
        in.tool_choice = common_chat_tool_choice_parse_oaicompat(c);
        return;
    }
    if (!it->is_object()) bad_request("'tool_choice' must be a string or an object", "tool_choice");
    // {"type":"function","name":"x"}: only that tool, and it must be called.
    auto name = opt_string(*it, "name");
    if (!name || name->empty()) bad_request("'tool_choice.name' is required", "tool_choice");
    std::erase_if(in.tools, [&](const common_chat_tool & t) { return t.name != *name; });
    if (in.tools.empty()) bad_request("'tool_choice' names a tool that is not in 'tools': " + safe_quote(*name), "tool_choice");
    in.tool_choice = COMMON_CHAT_TOOL_CHOICE_REQUIRED;
}

// text.format: {type: text | json_object | json_schema, name, schema}.
void read_text_format(const json & body, engine::chat_input & in) {
    auto text = body.find("text");
    if (text == body.end() || text->is_null()) return;
    if (!text->is_object()) bad_request("'text' must be an object", "text");
    auto f = text->find("format");
    if (f == text->end() || f->is_null()) return;
    if (!f->is_object()) bad_request("'text.format' must be an object", "text.format");
    std::string type;
    try {
        type = opt_string(*f, "type").value_or("text");
    } catch (const api_error &) {
        bad_request("'text.format.type' must be a string", "text.format");
    }
    if (type == "json_object") {
        in.json_schema = R"({"type":"object"})";
    } else if (type == "json_schema") {
        auto schema = f->find("schema");
        if (schema != f->end() && !schema->is_null() && !schema->is_object()) bad_request("'text.format.schema' must be an object", "text.format");
        in.json_schema = schema == f->end() || schema->is_null() ? "{}" : dump(*schema);
    } else if (type != "text") {
        bad_request("'text.format.type' must be text, json_object or json_schema", "text.format");
    }
}

}  // namespace

void read_responses_request(const json & body, generation_input & in) {
    if (body.contains("previous_response_id") && !body["previous_response_id"].is_null())
        bad_request("'previous_response_id' is not supported: this server keeps no response state; send the whole input", "previous_response_id");
    in.task = "responses";
    in.prompt_field = "input";
    in.schema_field = "text.format";
    engine::chat_input chat;
    chat.messages = read_messages(body);
    chat.tools = read_tools(body);
    read_tool_choice(body, chat);
    chat.parallel_tool_calls = opt_bool(body, "parallel_tool_calls").value_or(true);
    read_text_format(body, chat);
    read_reasoning_controls(body, chat);
    in.chat = std::move(chat);
    read_sampling(body, in.params);
}

}  // namespace rc::api::openai
