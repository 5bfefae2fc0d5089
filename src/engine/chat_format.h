#pragma once
// Chat formatting through llama.cpp's common jinja engine and the model's own template, exactly as
// llama-server does it: messages + tools → prompt text, grammar (tool calls / JSON schema), extra
// stops and the parser that turns generated text back into content, reasoning and tool calls.
// Thread-safe (the model's templates are immutable); called on HTTP threads.
#include <chat.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/constraint.h"
#include "engine/tool_call_ids.h"
#include "llama/model.h"
#include "util/result.h"

namespace rc::engine {

struct chat_input {
    std::vector<common_chat_msg> messages;
    std::vector<common_chat_tool> tools;
    common_chat_tool_choice tool_choice = COMMON_CHAT_TOOL_CHOICE_AUTO;
    bool parallel_tool_calls = false;
    std::string json_schema;        // JSON text of a schema the output must satisfy; empty: none
    std::string grammar;            // user GBNF; empty: none (exclusive with tools and json_schema)
    bool enable_thinking = true;
    // Variables for the template, each as JSON text (llama-server's chat_template_kwargs, and
    // reasoning_effort); and how generated reasoning is split from the reply.
    std::map<std::string, std::string> template_kwargs;
    common_reasoning_format reasoning_format = COMMON_REASONING_FORMAT_AUTO;
    bool add_generation_prompt = true;
    // Only the prompt text is wanted (a prefix-cache lookup tokenizes it): no grammar, output parser or
    // generation prompt is made (llama.cpp renders the template once instead of three times).
    bool prompt_only = false;
    std::function<bool()> cancelled;  // true once the client left: the render stops (may be empty)
};

struct chat_prompt {
    std::string text;                           // the rendered prompt
    constraint grammar;
    std::vector<std::string> additional_stops;  // from the template (e.g. end-of-turn strings)
    common_chat_parser_params parser;           // for parse_chat_output
    tool_id_style tool_ids = tool_id_style::any;  // the ids this template accepts (for generated calls)
};

// Errors: invalid_argument when the template rejects the messages/tools, exceeds its budget
// (llama/template_budget.h) or the schema is invalid.
// tool_choice required (or named) and a JSON schema that the template's grammar cannot enforce are
// invalid_argument too, naming the model (`model_name`, as the client named it; else general.name).
result<chat_prompt> render_chat(const llama::model & m, const chat_input & in, std::string_view model_name = {});

// Parses generated text (partial while streaming) into content / reasoning / tool calls.
// Never throws; on a parse failure of final text returns the text as plain content.
common_chat_msg parse_chat_output(const std::string & text, bool partial, const common_chat_parser_params & parser);
// The same, saying whether the text matched the template's format at all (nullopt when not).
std::optional<common_chat_msg> try_parse_chat_output(const std::string & text, bool partial, const common_chat_parser_params & parser);

// JSON schema → GBNF constraint for raw completions (no template involved).
result<constraint> schema_constraint(const std::string & json_schema);

}  // namespace rc::engine
