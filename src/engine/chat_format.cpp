#include "engine/chat_format.h"

#include <json-schema-to-grammar.h>
#include <json.h>

#include <regex>

#include "engine/schema_support.h"
#include "llama/template_budget.h"

namespace rc::engine {

std::string require_immediate_tool_call(const std::string & gbnf) {
    // llama.cpp's tool-call grammars let free text precede the call even when one is required:
    //   root ::= "<|im_start|>assistant\n" space until-161? tool-calls
    // OpenAI's `required` and named tool_choice mean the reply *is* a tool call, so the optional
    // text-until-the-call-marker rule is dropped from the root rule (nothing else changes).
    size_t start = gbnf.rfind("root ::=", 0) == 0 ? 0 : gbnf.find("\nroot ::=");
    if (start == std::string::npos) return gbnf;
    if (start != 0) ++start;
    size_t end = gbnf.find('\n', start);
    if (end == std::string::npos) end = gbnf.size();
    static const std::regex optional_until(R"(\s+until-[0-9]+\?)");
    std::string root = std::regex_replace(gbnf.substr(start, end - start), optional_until, "");
    return gbnf.substr(0, start) + root + gbnf.substr(end);
}

std::string allow_one_tool_call(const std::string & gbnf) {
    // Some of llama.cpp's tool-call grammars repeat the call regardless of parallel_tool_calls:
    //   tool-calls ::= (tool-call space)+
    // Without parallel calls the reply holds exactly one, so the repetition is dropped.
    static const std::regex repeated(R"((^|\n)tool-calls ::= \(tool-call space\)\+(\n|$))");
    return std::regex_replace(gbnf, repeated, "$1tool-calls ::= tool-call space$2");
}

result<chat_prompt> render_chat(const llama::model & m, const chat_input & in) {
    if (!m.templates()) return make_error(errc::invalid_argument, "model has no chat template (an embedding model?)");
    if (in.messages.empty()) return make_error(errc::invalid_argument, "messages must not be empty");
    if (!in.grammar.empty() && (!in.tools.empty() || !in.json_schema.empty())) {
        return make_error(errc::invalid_argument, "a custom grammar cannot be combined with tools or a JSON schema");
    }
    if (auto st = check_schema_support(in.json_schema); !st) return st.err();
    for (const auto & t : in.tools) {
        if (auto st = check_schema_support(t.parameters); !st) return make_error(errc::invalid_argument, "tool " + t.name + ": " + st.err().message);
    }

    common_chat_templates_inputs inputs;
    const tool_id_style ids = tool_id_style_of(common_chat_templates_source(m.templates()));
    inputs.messages = in.messages;
    fill_tool_call_ids(inputs.messages, ids);
    inputs.tools = in.tools;
    inputs.tool_choice = in.tool_choice;
    inputs.parallel_tool_calls = in.parallel_tool_calls;
    inputs.json_schema = in.json_schema;
    inputs.grammar = in.grammar;
    inputs.use_jinja = true;
    inputs.add_generation_prompt = in.add_generation_prompt;
    inputs.enable_thinking = in.enable_thinking;
    inputs.chat_template_kwargs = in.template_kwargs;
    inputs.reasoning_format = in.reasoning_format;

    chat_prompt out;
    out.tool_ids = ids;
    common_chat_params params;
    auto rendered = llama::run_template("chat template", [&] { params = common_chat_templates_apply(m.templates(), inputs); }, in.cancelled);
    if (!rendered) return rendered.err();
    out.text = std::move(params.prompt);
    out.additional_stops = params.additional_stops;

    auto & g = out.grammar;
    if (!params.grammar.empty()) {
        // Like llama-server: a template-produced grammar (tool calls, or the schema wrapped by the
        // template's own format) is fed the generation prompt so the grammar starts in the right state.
        g.type = in.grammar.empty() ? COMMON_GRAMMAR_TYPE_TOOL_CALLS : COMMON_GRAMMAR_TYPE_USER;
        g.grammar = in.tool_choice == COMMON_CHAT_TOOL_CHOICE_REQUIRED && !in.tools.empty()
                        ? require_immediate_tool_call(params.grammar)
                        : params.grammar;
        if (!in.tools.empty() && !in.parallel_tool_calls) g.grammar = allow_one_tool_call(g.grammar);
        g.lazy = params.grammar_lazy;
        g.triggers = params.grammar_triggers;
        g.preserved_tokens = params.preserved_tokens;
    } else if (!in.json_schema.empty()) {
        auto sc = schema_constraint(in.json_schema);
        if (!sc) return sc.err();
        g = std::move(sc.value());
    } else if (!in.grammar.empty()) {
        g.type = COMMON_GRAMMAR_TYPE_USER;
        g.grammar = in.grammar;
    }
    g.generation_prompt = params.generation_prompt;

    out.parser = common_chat_parser_params(params);
    out.parser.reasoning_format = in.reasoning_format;
    out.parser.parse_tool_calls = !in.tools.empty() && in.tool_choice != COMMON_CHAT_TOOL_CHOICE_NONE;
    if (!params.parser.empty()) {
        try {
            out.parser.parser.load(params.parser);
        } catch (const std::exception & e) {
            return make_error(errc::internal, std::string("chat output parser: ") + e.what());
        }
    }
    return out;
}

common_chat_msg parse_chat_output(const std::string & text, bool partial, const common_chat_parser_params & parser) {
    try {
        return common_chat_parse(text, partial, parser);
    } catch (const std::exception &) {
        common_chat_msg msg;
        msg.role = "assistant";
        if (!partial) msg.content = text;
        return msg;
    }
}

result<constraint> schema_constraint(const std::string & json_schema) {
    if (auto st = check_schema_support(json_schema); !st) return st.err();
    constraint c;
    try {
        c.grammar = json_schema_to_grammar(common_json::parse(json_schema));
    } catch (const std::exception & e) {
        return make_error(errc::invalid_argument, std::string("invalid JSON schema: ") + e.what());
    }
    c.type = COMMON_GRAMMAR_TYPE_OUTPUT_FORMAT;
    return c;
}

}  // namespace rc::engine
