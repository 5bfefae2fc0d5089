#pragma once
// Tool-call ids in the form the model's chat template accepts (issue 32). Most templates take any
// id; Mistral's (Nemo, Small 3.x, Devstral) raise unless every id is 9 letters and digits. And
// Ollama clients send tool calls without ids and tool results without `tool_call_id`, which
// templates that pair calls with results by id (Mistral, Command-R) cannot render.
//
// Contract:
// * style_of() reads the template's own check, so a new family with the same rule is found too.
// * fill_ids() gives every tool call and tool result of a history an id the style accepts: an id the
//   style already accepts is kept; another is mapped to one that it accepts, the same way wherever
//   it appears (a call and its result keep matching, across requests too); a missing call id is
//   derived from the call's place in the history; a result without `tool_call_id` answers the
//   oldest unanswered call of the assistant message before it (of its `tool_name`, when named).
// * new_id() is a fresh random id for a generated call. Pure otherwise; thread-safe.
#include <chat.h>

#include <string>
#include <vector>

namespace rc::engine {

enum class tool_id_style {
    any,         // "call_" + 24 letters and digits (OpenAI's shape)
    nine_alnum,  // exactly 9 letters and digits (Mistral)
};

tool_id_style tool_id_style_of(const std::string & template_source);
bool tool_id_fits(const std::string & id, tool_id_style style);
std::string new_tool_call_id(tool_id_style style);
void fill_tool_call_ids(std::vector<common_chat_msg> & messages, tool_id_style style);

}  // namespace rc::engine
