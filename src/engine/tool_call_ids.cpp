#include "engine/tool_call_ids.h"

#include <deque>
#include <map>
#include <random>
#include <set>

#include "util/sha256.h"

namespace rc::engine {

namespace {

constexpr char k_alnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

size_t length_of(tool_id_style style) { return style == tool_id_style::nine_alnum ? 9 : 24; }
std::string prefix_of(tool_id_style style) { return style == tool_id_style::nine_alnum ? "" : "call_"; }

// An id of the style derived from `seed`: the same seed, the same id.
std::string derived_id(const std::string & seed, tool_id_style style) {
    const digest256 d = sha256().feed(std::string_view("rustycage-tool-call-id/1\n")).feed(seed).finish();
    std::string id = prefix_of(style);
    for (size_t i = 0; i < length_of(style); ++i) id += k_alnum[d[i] % 62];
    return id;
}

bool alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

}  // namespace

tool_id_style tool_id_style_of(const std::string & source) {
    return source.find("length != 9") != std::string::npos || source.find("length 9") != std::string::npos ? tool_id_style::nine_alnum
                                                                                                          : tool_id_style::any;
}

bool tool_id_fits(const std::string & id, tool_id_style style) {
    if (style == tool_id_style::any) return !id.empty();
    if (id.size() != 9) return false;
    for (char c : id)
        if (!alnum(c)) return false;
    return true;
}

std::string new_tool_call_id(tool_id_style style) {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    std::string id = prefix_of(style);
    for (size_t i = 0; i < length_of(style); ++i) id += k_alnum[rng() % 62];
    return id;
}

void fill_tool_call_ids(std::vector<common_chat_msg> & messages, tool_id_style style) {
    // Ids the history writes in a form the style accepts are kept as they are; a derived one must
    // never equal one of them, nor another derived one: a client can compute derived_id() and send
    // its result as a literal id, which made two calls share one id.
    std::set<std::string> taken;
    for (const auto & m : messages) {
        for (const auto & call : m.tool_calls)
            if (tool_id_fits(call.id, style)) taken.insert(call.id);
        if (m.role == "tool" && tool_id_fits(m.tool_call_id, style)) taken.insert(m.tool_call_id);
    }
    std::map<std::pair<bool, std::string>, std::string> mapped;  // {a place?, a foreign id or a call's place} -> its id here
    auto unique = [&](bool place, const std::string & seed) {
        if (auto it = mapped.find({place, seed}); it != mapped.end()) return it->second;
        std::string id = derived_id(seed, style);
        for (int n = 1; taken.count(id); ++n) id = derived_id(seed + "\n#" + std::to_string(n), style);
        taken.insert(id);
        return mapped[{place, seed}] = id;
    };
    auto fitted = [&](const std::string & id) { return tool_id_fits(id, style) ? id : unique(false, id); };
    struct open_call {
        std::string id, name;
    };
    std::deque<open_call> unanswered;  // calls of the last assistant message that no result answered yet
    for (size_t i = 0; i < messages.size(); ++i) {
        auto & m = messages[i];
        if (!m.tool_calls.empty()) {
            unanswered.clear();
            for (size_t k = 0; k < m.tool_calls.size(); ++k) {
                auto & call = m.tool_calls[k];
                call.id = call.id.empty() ? unique(true, "message " + std::to_string(i) + " call " + std::to_string(k)) : fitted(call.id);
                unanswered.push_back({call.id, call.name});
            }
            continue;
        }
        if (m.role != "tool") continue;
        if (m.tool_call_id.empty()) {
            auto it = unanswered.begin();
            if (!m.tool_name.empty())
                while (it != unanswered.end() && it->name != m.tool_name) ++it;
            if (it == unanswered.end()) it = unanswered.begin();
            if (it != unanswered.end()) {
                m.tool_call_id = it->id;
                if (m.tool_name.empty()) m.tool_name = it->name;
                unanswered.erase(it);
            }
        } else {
            m.tool_call_id = fitted(m.tool_call_id);
            for (auto it = unanswered.begin(); it != unanswered.end(); ++it)
                if (it->id == m.tool_call_id) {
                    unanswered.erase(it);
                    break;
                }
        }
    }
}

}  // namespace rc::engine
