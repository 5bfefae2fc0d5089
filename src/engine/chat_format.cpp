#include "engine/chat_format.h"

#include <llama.h>

#include <json-schema-to-grammar.h>
#include <json.h>

#include <vector>

#include "engine/sampler.h"
#include "engine/schema_support.h"
#include "engine/tool_call_grammar.h"
#include "llama/template_budget.h"
#include "util/log.h"

namespace rc::engine {

namespace {

std::string template_of(const llama::model & m, std::string_view model_name) {
    std::string name(model_name.empty() ? std::string_view(m.info().name) : model_name);
    return "the chat template of model '" + (name.empty() ? std::string("(unnamed)") : name) + "'";
}

// Whether a grammar accepts the generation prompt the sampler will feed it (as common_sampler_init:
// the prompt's tokens, one by one). A grammar that does not cannot start a sampler at all.
bool accepts_generation_prompt(const llama::model & m, const std::string & gbnf, const std::string & prompt) {
    llama_sampler * g = llama_sampler_init_grammar(m.vocab(), gbnf.c_str(), "root");
    if (!g) return false;
    bool ok = true;
    try {
        for (llama_token t : m.tokenize(prompt, false, true)) llama_sampler_accept(g, t);
    } catch (const std::exception &) {
        ok = false;
    }
    llama_sampler_free(g);
    return ok;
}

// The template's grammar with nothing allowed before the call (or the schema reply), as far as the
// generation prompt allows: Gemma 4 with thinking off puts a closed thought block (one of its repeated
// `message`s) in the prompt, so there the repetition stays, holding thought blocks only.
std::string immediate_structure(const llama::model & m, const std::string & gbnf, const std::string & generation_prompt, bool thinking) {
    // A grammar over the limits (a client's huge or deep tool schema) is never parsed here: the
    // sampler refuses it with the reason, and llama.cpp's parser recurses.
    if (!check_grammar_cost(m, gbnf)) return gbnf;
    // With thinking off, first no reasoning either (a template whose prompt does not close the block
    // would otherwise let the model think on). Then everything repeated before the call goes; where
    // the generation prompt needs the repetition (a closed thought block), only its free text goes;
    // failing all, the repetition stays. Each must accept the generation prompt it is fed.
    const std::string kept_repetition = require_immediate_tool_call(gbnf, false);
    std::vector<std::string> candidates;
    if (!thinking) candidates.push_back(require_immediate_tool_call(gbnf, true, false));
    candidates.insert(candidates.end(), {require_immediate_tool_call(gbnf, true), drop_free_text_in_repeated(kept_repetition), kept_repetition});
    for (const std::string & g : candidates) {
        if (generation_prompt.empty() || accepts_generation_prompt(m, g, generation_prompt)) return g;
    }
    return gbnf;
}

// What the client asked for must be what the sampler enforces: a 400 rather than free text.
status check_enforceable(const chat_input & in, const constraint & g, const llama::model & m, std::string_view model_name) {
    const bool strict = !g.grammar.empty() && !g.lazy;
    if (!in.tools.empty() && in.tool_choice == COMMON_CHAT_TOOL_CHOICE_REQUIRED && !strict) {
        return make_error(errc::invalid_argument, "tool_choice \"required\" (or a named tool) cannot be enforced: llama.cpp finds no tool-call format in " +
                                                      template_of(m, model_name) + "; use tool_choice \"auto\", or a model whose template calls tools");
    }
    if (!in.json_schema.empty() && !strict) {
        return make_error(errc::invalid_argument, "response_format cannot be enforced together with tools by " + template_of(m, model_name) +
                                                      ": its tool-call grammar leaves text replies free; send the schema without tools, or with tool_choice \"required\"");
    }
    return {};
}

}  // namespace

result<chat_prompt> render_chat(const llama::model & m, const chat_input & in, std::string_view model_name) {
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
    inputs.prompt_only = in.prompt_only;

    chat_prompt out;
    out.tool_ids = ids;
    common_chat_params params;
    auto rendered = llama::run_template("chat template", [&] { params = common_chat_templates_apply(m.templates(), inputs); }, in.cancelled);
    if (!rendered) return rendered.err();
    out.text = std::move(params.prompt);
    out.additional_stops = params.additional_stops;
    if (in.prompt_only) return out;

    auto & g = out.grammar;
    if (!params.grammar.empty()) {
        // Like llama-server: a template-produced grammar (tool calls, or the schema wrapped by the
        // template's own format) is fed the generation prompt so the grammar starts in the right state.
        g.type = in.grammar.empty() ? COMMON_GRAMMAR_TYPE_TOOL_CALLS : COMMON_GRAMMAR_TYPE_USER;
        g.generation_prompt = params.generation_prompt;
        // A forced call, or a schema reply with thinking off (gpt-oss's analysis channel would come
        // first, free text the model may never end): nothing but the structure (and reasoning, when on).
        const bool forced_call = in.tool_choice == COMMON_CHAT_TOOL_CHOICE_REQUIRED && !in.tools.empty();
        const bool bare_schema = !in.json_schema.empty() && in.tools.empty() && !in.enable_thinking;
        g.grammar = forced_call || bare_schema ? immediate_structure(m, params.grammar, params.generation_prompt, in.enable_thinking)
                                               : params.grammar;
        if (!in.tools.empty() && !in.parallel_tool_calls) g.grammar = allow_one_tool_call(g.grammar);
        g.lazy = params.grammar_lazy;
        g.triggers = params.grammar_triggers;
        g.preserved_tokens = params.preserved_tokens;
    } else if (!in.json_schema.empty()) {
        // The template has no format of its own for a schema: the reply is the JSON itself (a
        // grammar that starts at the reply, so it is not fed the generation prompt).
        auto sc = schema_constraint(in.json_schema);
        if (!sc) return sc.err();
        g = std::move(sc.value());
    } else if (!in.grammar.empty()) {
        g.type = COMMON_GRAMMAR_TYPE_USER;
        g.grammar = in.grammar;
    }
    if (rc::log::current_level() == rc::log::level::debug && !g.grammar.empty())
        rc::log::debug("engine", "grammar", {{"model", model_name}, {"lazy", g.lazy}, {"grammar", g.grammar}});
    if (auto st = check_enforceable(in, g, m, model_name); !st) return st.err();

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

std::optional<common_chat_msg> try_parse_chat_output(const std::string & text, bool partial, const common_chat_parser_params & parser) {
    try {
        return common_chat_parse(text, partial, parser);
    } catch (const std::exception &) {
        return std::nullopt;
    }
}

common_chat_msg parse_chat_output(const std::string & text, bool partial, const common_chat_parser_params & parser) {
    if (auto msg = try_parse_chat_output(text, partial, parser)) return std::move(*msg);
    common_chat_msg msg;
    msg.role = "assistant";
    if (!partial) msg.content = text;
    return msg;
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
