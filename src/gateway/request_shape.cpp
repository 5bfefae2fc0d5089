#include "gateway/request_shape.h"

#include "http/json_fields.h"

namespace rc::gateway {
using namespace rc::http;  // written against the HTTP shell (src/http)

namespace {

using json = nlohmann::ordered_json;  // the client's field order is kept (a template renders tools in it)

constexpr char unit_sep = '\x1f', record_sep = '\x1e', group_sep = '\x1d';

std::string str(const json & j, const char * key) {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A message's content as text: a string, or the text of its parts (other parts by their JSON).
std::string content_text(const json & c) {
    if (c.is_string()) return c.get<std::string>();
    if (c.is_null()) return {};
    if (c.is_array()) {
        std::string out;
        for (const auto & part : c) out += part.is_object() && part.contains("text") && part["text"].is_string() ? part["text"].get<std::string>() : part.dump();
        return out;
    }
    return c.dump();
}

std::string messages_text(const json & messages) {
    std::string out;
    if (!messages.is_array()) return out;
    for (const auto & m : messages) {
        if (!m.is_object()) continue;
        out += str(m, "role");
        out += unit_sep;
        if (auto c = m.find("content"); c != m.end()) out += content_text(*c);
        if (auto t = m.find("tool_calls"); t != m.end() && !t->is_null()) out += unit_sep + t->dump();
        out += record_sep;
    }
    return out;
}

std::string token_text(const json & ids) {
    std::string out;
    for (const auto & t : ids) out += (t.is_number_integer() ? std::to_string(t.get<long long>()) : t.dump()) + ",";
    return out;
}

// OpenAI completions: a string, token ids, or a list of them (the first counts).
std::string prompt_text(const json & prompt) {
    const json * p = &prompt;
    if (p->is_array() && !p->empty() && (p->front().is_string() || p->front().is_array())) p = &p->front();
    if (p->is_string()) return p->get<std::string>();
    if (p->is_array()) return token_text(*p);
    return {};
}

bool is_ollama_path(const std::string & path) { return path == "/" || path.rfind("/api/", 0) == 0; }

}  // namespace

uint64_t fnv1a(const std::string & text, uint64_t seed) {
    uint64_t h = seed;
    for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
    return h;
}

result<request_shape> shape_request(const std::string & method, const std::string & path, const std::string & body,
                                    const std::multimap<std::string, std::string> & query) {
    request_shape s;
    s.ollama = is_ollama_path(path);
    if (auto q = query.find("model"); q != query.end()) s.model = q->second;
    if (method != "POST" || body.empty()) return s;
    // The hosts' own bounds (depth, size): a body they would refuse is refused here, never forwarded.
    auto parsed = http::parse_json_bounded(body);
    if (!parsed || !parsed->is_object()) return make_error(errc::invalid_argument, "the request body must be a JSON object (within the depth and size bounds)");
    const json & j = *parsed;
    if (auto m = j.find("model"); m != j.end() && !m->is_null()) {
        if (!m->is_string()) return make_error(errc::invalid_argument, "'model' must be a string");
        s.model = m->get<std::string>();
    } else if (auto n = j.find("name"); s.ollama && n != j.end() && n->is_string()) {
        s.model = n->get<std::string>();  // Ollama's deprecated spelling
    }
    const std::string head = s.model + group_sep + str(j, "cache_salt") + group_sep;
    const bool has_messages = j.contains("messages") && j["messages"].is_array();
    const bool has_prompt = j.contains("prompt") && !j["prompt"].is_null();
    std::string text;
    if (path == "/v1/chat/completions" || path == "/api/chat" || (path == "/v1/kv/prefetch" && has_messages)) {
        text = messages_text(j.value("messages", json()));
        s.lookup = has_messages && !j["messages"].empty();
    } else if (path == "/v1/completions" || (path == "/v1/kv/prefetch" && has_prompt)) {
        text = has_prompt ? prompt_text(j["prompt"]) : "";
        s.lookup = !text.empty();
    } else if (path == "/api/generate") {
        const std::string prompt = str(j, "prompt");
        if (auto c = j.find("context"); c != j.end() && c->is_array()) text = token_text(*c) + record_sep;
        text += str(j, "system") + unit_sep + prompt;
        s.lookup = !prompt.empty();  // an empty prompt loads or unloads the model: nothing to look up
    } else if (path == "/v1/responses") {
        // Read as the host reads it: instructions and input items become the chat's messages.
        if (auto in = j.find("input"); in != j.end() && !in->is_null()) {
            text = str(j, "instructions") + record_sep + (in->is_string() ? in->get<std::string>() : in->dump());
            s.lookup = in->is_string() || (in->is_array() && !in->empty());
        }
    }
    if (!text.empty()) s.canonical = head + text;
    if (s.lookup) {
        const char * api = s.ollama ? "ollama" : path == "/v1/responses" ? "responses" : "openai";
        s.lookup_body = std::move(*parsed);  // j is done with
        s.lookup_body["api"] = api;
    }
    return s;
}

}  // namespace rc::gateway
