#include "api/chat_output.h"

#include <nlohmann/json.hpp>
#include <unicode.h>

#include <algorithm>

#include "engine/chat_format.h"
#include "llama/template_budget.h"

namespace rc::api {

namespace {

constexpr std::string_view replacement_char = "\xEF\xBF\xBD";  // U+FFFD

// The part of `now` beyond what was already sent, when `now` extends it; otherwise nothing (the
// parser revised text it had shown, which cannot be taken back from the client).
std::string extension(const std::string & now, std::string & sent) {
    if (now.size() <= sent.size() || now.compare(0, sent.size(), sent) != 0) return {};
    std::string d = now.substr(sent.size());
    sent = now;
    return d;
}

}  // namespace

void chat_output_parser::take(std::string_view piece, bool final) {
    // Decoded with llama.cpp's own reader, the one the template's parser uses: what passes here
    // passes there.
    pending_.append(piece);
    size_t i = 0;
    while (i < pending_.size()) {
        auto r = common_parse_utf8_codepoint(pending_, i);
        if (r.status == utf8_parse_result::SUCCESS) {
            text_.append(pending_, i, r.bytes_consumed);
            i += r.bytes_consumed;
        } else if (r.status == utf8_parse_result::INCOMPLETE) {
            if (!final) break;  // the rest of the sequence is in the next piece
            text_.append(replacement_char);  // the reply ended inside a code point: one U+FFFD for it
            i = pending_.size();
        } else {
            text_.append(replacement_char);
            ++i;
        }
    }
    pending_.erase(0, i);
}

output_delta chat_output_parser::feed(std::string_view piece) {
    if (!parser_) {
        // Raw text needs no parse; appending keeps long replies linear.
        msg_.content.append(piece);
        output_delta d;
        d.content.assign(piece);
        return d;
    }
    take(piece, false);
    common_chat_msg next = engine::parse_chat_output(text_, true, *parser_);
    if (next.empty()) return {};  // the parser holds back text that may still become markup
    return advance(std::move(next), false);
}

void chat_output_parser::append(std::string_view piece) {
    if (!parser_) msg_.content.append(piece);
    else take(piece, false);
}

output_delta chat_output_parser::finish(bool cut) {
    msg_.role = "assistant";
    if (!parser_) return {};
    take({}, true);
    return advance(cut ? cut_reply() : engine::parse_chat_output(text_, false, *parser_), true);
}

common_chat_msg chat_output_parser::cut_reply() const {
    // A reply cut at the limit: the parse as if more were coming, so an open reasoning block is
    // reasoning and not lost; a call whose arguments are not yet whole JSON is no call at all.
    auto msg = engine::try_parse_chat_output(text_, false, *parser_);
    if (!msg) msg = engine::try_parse_chat_output(text_, true, *parser_);
    const bool unfinished_call = msg && std::any_of(msg->tool_calls.begin(), msg->tool_calls.end(), [](const common_chat_tool_call & tc) {
        return !nlohmann::json::accept(tc.arguments);
    });
    if (msg && !unfinished_call && (!msg->empty() || text_.empty())) return std::move(*msg);
    // Unparsed markup: everything after the reasoning, as it was generated.
    common_chat_msg out;
    out.role = "assistant";
    size_t from = 0;
    if (msg && !msg->reasoning_content.empty()) {
        out.reasoning_content = msg->reasoning_content;
        // Where the reasoning ends in the raw text (the parse may trim its edges).
        std::string_view r = msg->reasoning_content;
        while (!r.empty() && std::isspace((unsigned char)r.front())) r.remove_prefix(1);
        while (!r.empty() && std::isspace((unsigned char)r.back())) r.remove_suffix(1);
        if (size_t at = text_.find(r); !r.empty() && at != std::string::npos) from = at + r.size();
    }
    out.content = text_.substr(from);
    return out;
}

output_delta chat_output_parser::advance(common_chat_msg next, bool final) {
    next.set_tool_call_ids(tool_ids_, [this] { return engine::new_tool_call_id(ids_); });
    output_delta d;
    d.content = extension(next.content, sent_content_);
    d.reasoning = extension(next.reasoning_content, sent_reasoning_);
    for (size_t i = 0; i < next.tool_calls.size(); ++i) {
        const auto & tc = next.tool_calls[i];
        if (i == sent_arguments_.size()) {
            // A partial parse may hold a name still growing: announce it once it cannot change.
            bool settled = final || i + 1 < next.tool_calls.size() || !tc.arguments.empty();
            if (!settled || tc.name.empty()) break;
            sent_arguments_.emplace_back();
            d.tool_calls.push_back({i, tc.id, tc.name, extension(tc.arguments, sent_arguments_.back())});
        } else if (auto more = extension(tc.arguments, sent_arguments_[i]); !more.empty()) {
            d.tool_calls.push_back({i, {}, {}, std::move(more)});
        }
    }
    msg_ = std::move(next);
    return d;
}

namespace {
bool mentions_reasoning(const std::string & t) {
    return t.find("<think>") != std::string::npos || t.find("reasoning_content") != std::string::npos;
}
}  // namespace

// Both parse and trial-render a template (a GGUF's, read without loading the model, for /api/tags
// and /api/show): under the render budget, like every other use of a template.
bool template_supports_thinking(const std::string & chat_template) {
    if (chat_template.empty()) return false;
    if (mentions_reasoning(chat_template)) return true;
    if (!llama::check_template_size(chat_template)) return false;
    bool thinks = false;
    auto st = llama::run_template("chat template", [&] {
        auto tmpls = common_chat_templates_init(nullptr, chat_template);
        thinks = tmpls && common_chat_templates_support_enable_thinking(tmpls.get());
    });
    return st && thinks;  // a template llama.cpp cannot parse (or render within its budget) cannot think either
}

bool template_calls_tools(const std::string & chat_template) {
    if (chat_template.empty() || !llama::check_template_size(chat_template)) return false;
    bool calls = false;
    auto st = llama::run_template("chat template", [&] {
        auto tmpls = common_chat_templates_init(nullptr, chat_template);
        if (!tmpls) return;
        common_chat_templates_inputs in;
        common_chat_msg user;
        user.role = "user";
        user.content = "hi";
        in.messages = {user};
        in.tools = {{"probe", "", R"({"type":"object","properties":{"x":{"type":"integer"}}})"}};
        in.tool_choice = COMMON_CHAT_TOOL_CHOICE_REQUIRED;
        const common_chat_params params = common_chat_templates_apply(tmpls.get(), in);
        calls = !params.grammar.empty() && !params.grammar_lazy;  // what tool_choice "required" needs (chat_format.cpp)
    });
    return st && calls;
}

bool model_supports_thinking(const llama::model & m) {
    if (!m.templates()) return false;
    if (mentions_reasoning(common_chat_templates_source(m.templates()))) return true;
    bool thinks = false;
    auto st = llama::run_template("chat template", [&] { thinks = common_chat_templates_support_enable_thinking(m.templates()); });
    return st && thinks;
}

}  // namespace rc::api
