#pragma once
// Where a chat's messages end in its prompt tokens, for models kept as whole states (engine.h
// kept_whole): a prefix of such a model resumes only where a state was stored, so a request names
// the points worth storing one at (generation_request::message_boundaries):
//  * the end of the leading system messages (where a shared system prompt ends): the prompt's common
//    prefix with a render of those messages and a stand-in question;
//  * the end of the history (where the next turn's prompt still agrees with this one): the common
//    prefix with a render of the chat and a stand-in reply and question, as the next turn will be.
// Common prefixes of tokens, so a template that renders the shorter chat differently, or a token
// that merges across the boundary, gives an earlier position, never a wrong one; a render that fails
// gives none. Thread-safe (the model is immutable; the memo is thread-safe).
#include <llama.h>

#include <span>
#include <vector>

#include "engine/chat_format.h"
#include "engine/render_memo.h"

namespace rc::engine {

struct chat_boundaries {
    int system_end = 0;   // 0: no system message, or a template that renders none before the question
    int history_end = 0;  // may be the whole prompt: the next turn shares all of it (its reply header too)
    // For generation_request::message_boundaries: ascending, each in (0, n_prompt).
    std::vector<int> positions(int n_prompt) const;
};

// `prompt`: the tokens of `chat` rendered with its generation prompt (BOS included, no continued
// context before it). `memo` may be null.
chat_boundaries message_boundaries(const llama::model & m, const chat_input & chat, std::span<const llama_token> prompt, render_memo * memo);

}  // namespace rc::engine
