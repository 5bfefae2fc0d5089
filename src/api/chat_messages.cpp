#include "api/chat_messages.h"

#include <json.h>

#include "http/api_error.h"
#include "api/generation_session.h"
#include "util/safe_quote.h"

namespace rc::api {
using namespace rc::http;  // written against the HTTP shell (src/http)

namespace {

// llama.cpp's parsers take its own JSON type: `j` copied value by value (the body is already bounded
// by parse_body, depth included), with no text in between.
common_json to_common(const json & j) {
    switch (j.type()) {
        case json::value_t::object: {
            common_json o = common_json::object();
            for (auto it = j.begin(); it != j.end(); ++it) o[it.key()] = to_common(it.value());
            return o;
        }
        case json::value_t::array: {
            common_json a = common_json::array();
            for (const auto & v : j) a.push_back(to_common(v));
            return a;
        }
        case json::value_t::string: return j.get_ref<const std::string &>();
        case json::value_t::boolean: return j.get<bool>();
        case json::value_t::number_integer: return j.get<int64_t>();
        case json::value_t::number_unsigned: return j.get<uint64_t>();
        case json::value_t::number_float: return j.get<double>();
        default: return nullptr;
    }
}

// A tool call's `arguments` string is parsed again by llama.cpp while the template renders (most
// templates take it as an object): it gets the body's bounds first, or 100,000 '[' in a string
// would recurse past the stack.
void check_tool_call_arguments(const json & m, const std::string & where) {
    auto calls = m.find("tool_calls");
    if (calls == m.end() || !calls->is_array()) return;
    for (size_t i = 0; i < calls->size(); ++i) {
        const json & call = (*calls)[i];
        if (!call.is_object()) continue;
        auto fn = call.find("function");
        if (fn == call.end() || !fn->is_object()) continue;
        auto args = fn->find("arguments");
        if (args != fn->end() && args->is_string()) {
            check_json_text(args->get_ref<const std::string &>(), where + ".tool_calls[" + std::to_string(i) + "].function.arguments");
        }
    }
}

}  // namespace

std::vector<common_chat_msg> read_chat_messages(const json & messages, const std::string & field) {
    if (!messages.is_array()) bad_request("'" + field + "' must be an array", field);
    if (messages.empty()) bad_request("'" + field + "' must not be empty", field);
    if (messages.size() > max_chat_messages)
        bad_request("'" + field + "' has " + std::to_string(messages.size()) + " messages; at most " + std::to_string(max_chat_messages) + " are accepted",
                    field);
    common_json copy = common_json::array();
    for (size_t i = 0; i < messages.size(); ++i) {
        const auto & m = messages[i];
        std::string where = field + "[" + std::to_string(i) + "]";
        if (!m.is_object()) bad_request(where + " must be an object", field);
        auto role = m.find("role");
        if (role == m.end() || !role->is_string()) bad_request(where + ".role must be a string", field);
        std::string r = role->get<std::string>();
        if (r != "system" && r != "developer" && r != "user" && r != "assistant" && r != "tool")
            bad_request(where + ".role " + safe_quote(r) + " is not one of system, developer, user, assistant, tool", field);
        auto content = m.find("content");
        bool has_content = content != m.end() && !content->is_null();
        if (has_content && !content->is_string() && !content->is_array())
            bad_request(where + ".content must be a string or an array of content parts", field);
        if (!has_content && !(r == "assistant" && m.contains("tool_calls"))) bad_request(where + ".content is required", field);
        check_tool_call_arguments(m, where);
        copy.push_back(to_common(m));
        if (r == "developer") copy.back()["role"] = "system";
    }
    try {
        return common_chat_msgs_parse_oaicompat(copy);
    } catch (const std::exception & e) {
        bad_request("'" + field + "': " + e.what(), field);
    }
}

std::vector<common_chat_tool> read_chat_tools(const json & tools, const std::string & field) {
    if (tools.is_null()) return {};
    if (!tools.is_array()) bad_request("'" + field + "' must be an array", field);
    if (tools.size() > max_chat_tools)
        bad_request("'" + field + "' has " + std::to_string(tools.size()) + " tools; at most " + std::to_string(max_chat_tools) + " are accepted", field);
    for (size_t i = 0; i < tools.size(); ++i) {
        if (!tools[i].is_object()) bad_request(field + "[" + std::to_string(i) + "] must be an object", field);
    }
    try {
        return common_chat_tools_parse_oaicompat(to_common(tools));
    } catch (const std::exception & e) {
        bad_request("'" + field + "': " + e.what(), field);
    }
}

}  // namespace rc::api
