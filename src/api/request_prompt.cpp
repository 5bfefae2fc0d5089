#include "api/request_prompt.h"

#include "api/generation_session.h"
#include "api/ollama/ollama_routes.h"
#include "api/openai/openai_common.h"
#include "api/openai/responses_request.h"
#include "http/api_error.h"

namespace rc::api {
using namespace rc::http;  // written against the HTTP shell (src/http)

request_prompt read_request_prompt(const models::model_entry & entry, const llama::model & m, int n_ctx, json & body, const std::string & api,
                                   engine::render_memo * memo) {
    generation_input in;
    in.render_memo = memo;
    in.model = entry.name;
    const bool has_messages = body.contains("messages") && !body["messages"].is_null();
    if (api == "responses") {
        openai::read_responses_request(body, in);
    } else if (api == "ollama") {
        if (has_messages) {
            ollama::read_chat_request(entry, body, in);
            if (in.chat->messages.empty()) bad_request("'messages' must not be empty: nothing to look up", "messages");
        } else if (!ollama::read_generate_request(entry, body, in)) {
            bad_request("'prompt' must not be empty: nothing to look up", "prompt");
        }
    } else {
        if (has_messages) {
            in.chat = openai::read_chat(body);
            in.prompt_field = "messages";
        } else {
            in.prompts = openai::read_prompts(body);
            in.prompts.resize(1);  // a list of prompts: the first is looked up
        }
        openai::read_sampling(body, in.params);
    }
    if (in.chat) in.chat->prompt_only = true;  // the tokens are all a lookup needs
    auto rendered = render_prompts(m, n_ctx, in);
    return {std::move(rendered.prompts.front()), std::move(in.params.cache_salt)};
}

}  // namespace rc::api
