#include "api/reasoning_controls.h"

#include <array>
#include <string_view>

#include "http/api_error.h"
#include "util/safe_quote.h"

namespace rc::api {
using namespace rc::http;  // written against the HTTP shell (src/http)

namespace {

constexpr std::array<std::string_view, 5> k_efforts = {"none", "minimal", "low", "medium", "high"};

void apply_effort(const std::string & effort, const std::string & field, engine::chat_input & in) {
    bool known = false;
    for (auto e : k_efforts) known = known || effort == e;
    if (!known) bad_request("'" + field + "' must be none, minimal, low, medium or high (got " + safe_quote(effort) + ")", field);
    if (effort == "none") {
        in.enable_thinking = false;
        in.template_kwargs.erase("reasoning_effort");
    } else {
        in.template_kwargs["reasoning_effort"] = json(effort).dump();
    }
}

}  // namespace

void read_reasoning_controls(const json & body, engine::chat_input & in) {
    if (auto it = body.find("chat_template_kwargs"); it != body.end() && !it->is_null()) {
        if (!it->is_object()) bad_request("'chat_template_kwargs' must be an object", "chat_template_kwargs");
        if (it->size() > max_template_kwargs)
            bad_request("'chat_template_kwargs' holds more than " + std::to_string(max_template_kwargs) + " variables", "chat_template_kwargs");
        size_t bytes = 0;
        for (const auto & [name, value] : it->items()) {
            if (name.empty()) bad_request("'chat_template_kwargs' has an empty variable name", "chat_template_kwargs");
            bytes += name.size() + dump(value).size();
            if (bytes > max_template_kwargs_bytes)
                bad_request("'chat_template_kwargs' is larger than " + std::to_string(max_template_kwargs_bytes) +
                                " bytes; template variables are switches, not content (send text in 'messages')",
                            "chat_template_kwargs");
            if (name == "enable_thinking") {
                if (!value.is_boolean())
                    bad_request("'chat_template_kwargs.enable_thinking' must be a boolean", "chat_template_kwargs.enable_thinking");
                in.enable_thinking = value.get<bool>();
            }
            in.template_kwargs[name] = dump(value);
        }
    }
    if (auto effort = opt_string(body, "reasoning_effort")) apply_effort(*effort, "reasoning_effort", in);
    if (auto r = body.find("reasoning"); r != body.end() && r->is_object()) {  // the Responses API's shape
        if (auto effort = opt_string(*r, "effort")) apply_effort(*effort, "reasoning.effort", in);
    }
    if (auto format = opt_string(body, "reasoning_format")) {
        if (*format == "none") in.reasoning_format = COMMON_REASONING_FORMAT_NONE;
        else if (*format == "auto") in.reasoning_format = COMMON_REASONING_FORMAT_AUTO;
        else if (*format == "deepseek") in.reasoning_format = COMMON_REASONING_FORMAT_DEEPSEEK;
        else if (*format == "deepseek-legacy") in.reasoning_format = COMMON_REASONING_FORMAT_DEEPSEEK_LEGACY;
        else bad_request("'reasoning_format' must be none, auto, deepseek or deepseek-legacy (got " + safe_quote(*format) + ")", "reasoning_format");
    }
}

void read_ollama_think_level(const json & body, engine::chat_input & in) {
    auto it = body.find("think");
    if (it == body.end() || !it->is_string()) return;  // a boolean (or nothing): on/off only, read_think
    in.template_kwargs["reasoning_effort"] = dump(*it);
}

}  // namespace rc::api
