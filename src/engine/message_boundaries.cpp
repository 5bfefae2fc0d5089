#include "engine/message_boundaries.h"

#include <algorithm>

namespace rc::engine {

namespace {

// The length of the common prefix of `prompt` and the tokens of `in` rendered prompt-only (0 when
// the template refuses it).
int common_prefix(const llama::model & m, chat_input in, std::span<const llama_token> prompt, render_memo * memo) {
    in.prompt_only = true;
    auto rendered = memo ? memo->render(in) : render_chat(m, in);
    if (!rendered) return 0;
    const auto tokens = m.tokenize(rendered->text, true, true);
    const auto [a, b] = std::mismatch(prompt.begin(), prompt.end(), tokens.begin(), tokens.end());
    return static_cast<int>(a - prompt.begin());
}

bool is_system(const common_chat_msg & msg) { return msg.role == "system" || msg.role == "developer"; }

// A message whose text the render places where the real one would go: the common prefix ends before it.
common_chat_msg stand_in(const char * role) {
    common_chat_msg m;
    m.role = role;
    m.content = "ok";
    return m;
}

}  // namespace

std::vector<int> chat_boundaries::positions(int n_prompt) const {
    std::vector<int> out;
    for (int at : {system_end, history_end})
        if (at > 0 && at < n_prompt && (out.empty() || out.back() < at)) out.push_back(at);
    return out;
}

chat_boundaries message_boundaries(const llama::model & m, const chat_input & chat, std::span<const llama_token> prompt, render_memo * memo) {
    chat_boundaries out;
    // The system prompt's end: where another conversation's first question would begin.
    const auto systems = std::find_if_not(chat.messages.begin(), chat.messages.end(), is_system) - chat.messages.begin();
    if (systems > 0 && systems < static_cast<long>(chat.messages.size())) {
        chat_input head = chat;
        head.messages.resize(static_cast<size_t>(systems));
        head.messages.push_back(stand_in("user"));
        head.add_generation_prompt = false;
        out.system_end = common_prefix(m, std::move(head), prompt, memo);
    }
    // The history's end: what the next turn's prompt (a reply and a question more) shares with this one.
    // A template that moves the system prompt into the last question shares little; one that always
    // opens the reply shares its header too.
    if (chat.add_generation_prompt) {
        chat_input next = chat;
        next.messages.push_back(stand_in("assistant"));
        next.messages.push_back(stand_in("user"));
        next.add_generation_prompt = false;
        out.history_end = common_prefix(m, std::move(next), prompt, memo);
    }
    return out;
}

}  // namespace rc::engine
