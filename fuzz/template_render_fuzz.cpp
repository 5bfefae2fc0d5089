// Chat templates as a model file or /api/create brings them. Input: a template, optionally followed
// by "\n===\n" and the messages (a JSON array) to render it with. The template is parsed and
// trial-rendered by llama.cpp's engine (common_chat_templates_init: parse and capability probes),
// then applied to the messages, each through llama::run_template under tight budgets. An error is
// a fine outcome; a crash (a stack overflow in the engine), a hang, a leak or UB is a finding.
#include <chat.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "http/json_fields.h"
#include "fuzz_templates.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    static const bool limited = (rc::fuzz::use_fuzz_template_limits(), true);
    (void)limited;
    std::string_view in(reinterpret_cast<const char *>(data), size);
    const size_t cut = in.find("\n===\n");
    std::string source(in.substr(0, cut));
    std::string messages = cut == std::string_view::npos ? std::string(R"([{"role":"user","content":"hi"}])") : std::string(in.substr(cut + 5));
    if (source.empty() || !rc::llama::check_template_size(source)) return 0;

    common_chat_templates_ptr templates;
    if (!rc::llama::run_template("fuzz", [&] { templates = common_chat_templates_init(nullptr, source); })) return 0;
    common_chat_templates_inputs inputs;
    if (!rc::http::parse_json_bounded(messages)) return 0;  // the bounds every body gets
    try {
        auto parsed = common_json::parse_no_throw(messages);
        if (parsed.is_discarded() || !parsed.is_array()) return 0;
        inputs.messages = common_chat_msgs_parse_oaicompat(parsed);
    } catch (const std::exception &) {
        return 0;
    }
    if (inputs.messages.empty()) return 0;
    inputs.use_jinja = true;
    inputs.add_generation_prompt = true;
    (void)rc::llama::run_template("fuzz", [&] { (void)common_chat_templates_apply(templates.get(), inputs); });
    return 0;
}
