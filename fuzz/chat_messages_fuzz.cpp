// A chat request's messages and tools, as the OpenAI chat route reads them, rendered with the real
// templates the test models carry (Qwen2.5's, and Mistral-Nemo's, which parses tool-call arguments
// and checks their ids). Input: a request body {"messages": [...], "tools": [...]}; its first byte
// picks the template. The body passes parse_body's bounds, read_chat_messages and read_chat_tools
// (which bound what the engine parses again, e.g. tool-call `arguments` strings), and the render
// runs under llama::run_template. A 4xx or a template error is fine; a crash (100,000 '[' in an
// arguments string once overflowed the stack), a hang, a leak or UB is a finding.
#include <chat.h>

#include <cstdint>
#include <string>

#include "http/api_error.h"
#include "api/chat_messages.h"
#include "http/json_fields.h"
#include "fuzz_templates.h"

namespace {

struct templates {
    common_chat_templates_ptr qwen, mistral;
    templates() {
        rc::fuzz::use_fuzz_template_limits();
        qwen = common_chat_templates_init(nullptr, rc::fuzz::tree_template("Qwen-Qwen2.5-7B-Instruct.jinja"));
        mistral = common_chat_templates_init(nullptr, rc::fuzz::tree_template("mistralai-Mistral-Nemo-Instruct-2407.jinja"));
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    static templates t;
    if (size == 0) return 0;
    rc::http::http_request req;
    req.body.assign(reinterpret_cast<const char *>(data) + 1, size - 1);
    common_chat_templates_inputs inputs;
    try {
        auto body = rc::http::parse_body(req);
        auto messages = body.find("messages");
        if (messages == body.end()) return 0;
        inputs.messages = rc::api::read_chat_messages(*messages);
        if (auto tools = body.find("tools"); tools != body.end()) inputs.tools = rc::api::read_chat_tools(*tools);
    } catch (const rc::http::api_error & e) {
        if (e.status < 400 || e.status >= 500) __builtin_trap();
        return 0;
    }
    inputs.use_jinja = true;
    inputs.add_generation_prompt = true;
    auto * chosen = (data[0] & 1) ? t.mistral.get() : t.qwen.get();
    (void)rc::llama::run_template("fuzz", [&] { (void)common_chat_templates_apply(chosen, inputs); });
    return 0;
}
