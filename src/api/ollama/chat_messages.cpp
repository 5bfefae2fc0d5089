#include "api/ollama/chat_messages.h"

#include "http/api_error.h"
#include "api/chat_messages.h"
#include "api/generation_session.h"
#include "util/safe_quote.h"

namespace rc::api::ollama {
using namespace rc::http;  // written against the HTTP shell (src/http)

namespace {

// One Ollama tool call → llama.cpp's call: the arguments object as JSON text (what the template
// renders from), or a string holding JSON (the OpenAI habit), checked against the body's bounds
// because the template parses it again.
common_chat_tool_call tool_call(const json & tc, const std::string & where) {
    if (!tc.is_object() || !tc.contains("function") || !tc["function"].is_object())
        bad_request(where + " must be an object with a 'function' object", "messages");
    const json & fn = tc["function"];
    if (!fn.contains("name") || !fn["name"].is_string()) bad_request(where + ".function.name must be a string", "messages");
    common_chat_tool_call out;
    out.name = fn["name"].get<std::string>();
    if (auto id = tc.find("id"); id != tc.end() && id->is_string()) out.id = id->get<std::string>();
    out.arguments = "{}";
    if (auto a = fn.find("arguments"); a != fn.end() && !a->is_null()) {
        if (a->is_object()) {
            out.arguments = dump(*a);
        } else if (a->is_string()) {
            check_json_text(a->get_ref<const std::string &>(), where + ".function.arguments");
            out.arguments = a->get<std::string>();
        } else {
            bad_request(where + ".function.arguments must be an object", "messages");
        }
    }
    return out;
}

common_chat_msg message(const json & m, size_t i) {
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) bad_request(where + " must be an object", "messages");
    auto role = m.find("role");
    if (role == m.end() || !role->is_string()) bad_request(where + ".role must be a string", "messages");
    common_chat_msg out;
    out.role = role->get<std::string>();
    if (out.role == "developer") out.role = "system";
    if (out.role != "system" && out.role != "user" && out.role != "assistant" && out.role != "tool")
        bad_request(where + ".role " + safe_quote(out.role) + " is not one of system, user, assistant, tool", "messages");
    if (auto c = m.find("content"); c != m.end() && !c->is_null()) {
        if (!c->is_string()) bad_request(where + ".content must be a string", "messages");
        out.content = c->get<std::string>();
    }
    if (auto im = m.find("images"); im != m.end() && !im->is_null()) {
        if (!im->is_array()) bad_request(where + ".images must be an array", "messages");
        if (!im->empty()) bad_request(where + ".images are not supported: no vision models are served", "messages");
    }
    if (auto t = m.find("thinking"); t != m.end() && !t->is_null()) {
        if (!t->is_string()) bad_request(where + ".thinking must be a string", "messages");
        out.reasoning_content = t->get<std::string>();
    }
    if (auto tcs = m.find("tool_calls"); tcs != m.end() && !tcs->is_null()) {
        if (!tcs->is_array()) bad_request(where + ".tool_calls must be an array", "messages");
        for (size_t k = 0; k < tcs->size(); ++k) out.tool_calls.push_back(tool_call((*tcs)[k], where + ".tool_calls[" + std::to_string(k) + "]"));
    }
    // A tool result names its tool with tool_name (older clients: name).
    for (const char * key : {"tool_name", "name"}) {
        if (auto n = m.find(key); n != m.end() && n->is_string() && !n->get<std::string>().empty()) {
            out.tool_name = n->get<std::string>();
            break;
        }
    }
    if (auto id = m.find("tool_call_id"); id != m.end() && id->is_string()) out.tool_call_id = id->get<std::string>();
    return out;
}

}  // namespace

std::vector<common_chat_msg> read_messages(const json & body) {
    auto it = body.find("messages");
    if (it == body.end() || it->is_null()) return {};
    if (!it->is_array()) bad_request("'messages' must be an array", "messages");
    if (it->empty()) return {};
    if (it->size() > max_chat_messages)  // before converting anything: a huge array costs a size check
        bad_request("'messages' has " + std::to_string(it->size()) + " messages; at most " + std::to_string(max_chat_messages) + " are accepted", "messages");
    std::vector<common_chat_msg> out;
    out.reserve(it->size());
    for (size_t i = 0; i < it->size(); ++i) out.push_back(message((*it)[i], i));
    return out;
}

std::vector<common_chat_tool> read_tools(const json & body) {
    auto it = body.find("tools");
    if (it == body.end() || it->is_null()) return {};
    if (!it->is_array()) bad_request("'tools' must be an array", "tools");
    json tools = *it;
    for (auto & t : tools) {
        // Some clients leave out type; every Ollama tool is a function.
        if (t.is_object() && !t.contains("type")) t["type"] = "function";
    }
    return read_chat_tools(tools, "tools");
}

}  // namespace rc::api::ollama
