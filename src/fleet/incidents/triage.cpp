#include "fleet/incidents/triage.h"

#include <set>

#include "http/http_client.h"

namespace rc::fleet {

namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

const std::vector<std::string> & severities() {
    static const std::vector<std::string> s = {"critical", "high", "medium", "low"};
    return s;
}
const std::vector<std::string> & components() {
    static const std::vector<std::string> c = {"server", "models", "engine", "kv", "api", "fleet", "hardware", "unknown"};
    return c;
}

bool one_of(const std::string & v, const std::vector<std::string> & allowed) {
    for (const auto & a : allowed)
        if (a == v) return true;
    return false;
}

std::string prompt_for(const fleet_incident & i) {
    std::string tail;
    if (auto t = i.evidence.find("log_tail"); t != i.evidence.end() && t->is_array()) {
        size_t from = t->size() > 15 ? t->size() - 15 : 0;
        for (size_t k = from; k < t->size(); ++k)
            if ((*t)[k].is_string()) tail += (*t)[k].get<std::string>().substr(0, 300) + "\n";
    }
    return "Incident on host " + i.host + "\nkind: " + i.kind + "\nerror: " + i.reason.substr(0, 500) + "\nmodel: " + i.model +
           "\nversions: " + i.versions.dump() + "\nlog tail:\n" + tail +
           "\nAnswer with a JSON object: severity (critical|high|medium|low), component, summary, suggested_action.";
}

struct rule {
    const char * kind;
    const char * severity;
    const char * component;
    const char * title;
    const char * action;
};
const rule rules[] = {
    {"crash_loop", "critical", "server", "Server crash loop", "Read the log tail; the server exits before it is ready. Check its flags, models and memory."},
    {"server_crash", "high", "server", "Server crashed", "Read the log tail and the exit status; reproduce with the same version and model."},
    {"quarantine_failed", "medium", "models", "Model failed its quarantine check", "Do not serve this model; re-download it or check the file's weights."},
    {"model_load_failed", "high", "models", "Model failed to load", "Check the model file, the memory budget and the backend on this host."},
    {"out_of_memory", "high", "hardware", "Out of memory", "Lower --memory-budget or --ctx-size, or move the model to a larger device."},
    {"smoke_test_failed", "high", "engine", "Smoke test failed", "The server answered a minimal request wrongly; compare with another host on the same version."},
    {"kv_corrupt_blocks", "medium", "kv", "Corrupt KV blocks on disk", "Check the disk under --kv-disk-dir; corrupt blocks are dropped, never served."},
    {"http_5xx_burst", "high", "api", "Burst of 5xx responses", "Look at the failing routes and the log tail around the burst."},
    {"rollout_failed", "high", "fleet", "Rollout failed on a host", "Read the step that failed and the log tail; the host was rolled back or never touched."},
    {"rollout_refused", "critical", "fleet", "Rollout artifact refused: signature",
     "A rollout named an artifact this host's trusted keys did not sign. Check who wrote the rollout and how it was signed before retrying."},
};

const rule * rule_for(const std::string & kind) {
    for (const auto & r : rules)
        if (kind == r.kind) return &r;
    return nullptr;
}

// A model's text for the issue body: one line, printable (bidirectional and zero-width controls,
// which can disguise text, are dropped too), capped.
std::string model_text(const std::string & text, size_t max) {
    std::string kept;
    for (size_t i = 0; i < text.size(); ++i) {
        // U+200B-U+200F, U+202A-U+202E, U+2060-U+2069, U+FEFF: E2 80 8B-8F, E2 80 AA-AE, E2 81 A0-A9, EF BB BF.
        const auto at = [&](size_t k) { return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0u; };
        if (at(0) == 0xE2 && at(1) == 0x80 && ((at(2) >= 0x8B && at(2) <= 0x8F) || (at(2) >= 0xAA && at(2) <= 0xAE))) { i += 2; continue; }
        if (at(0) == 0xE2 && at(1) == 0x81 && at(2) >= 0xA0 && at(2) <= 0xA9) { i += 2; continue; }
        if (at(0) == 0xEF && at(1) == 0xBB && at(2) == 0xBF) { i += 2; continue; }
        kept += text[i];
    }
    return sanitize_text(kept, max);
}

}  // namespace

std::string sanitize_text(const std::string & text, size_t max) {
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
        unsigned char c = static_cast<unsigned char>(text[i]);
        if (c == '\n' || c == '\r' || c == '\t') c = ' ';
        if (c < 0x20 || c == 0x7f) continue;
        if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
        if (c == '@') {
            out += "(at)";  // a model's text must not mention (notify) people
            continue;
        }
        out += static_cast<char>(c);
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    if (out.size() > max) {
        size_t cut = max;
        while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 sequence
        out.resize(cut);
    }
    return out;
}

json triage_schema() {
    return {{"type", "object"},
            {"properties",
             {{"severity", {{"type", "string"}, {"enum", severities()}}},
              {"component", {{"type", "string"}, {"enum", components()}}},
              {"summary", {{"type", "string"}, {"minLength", 1}, {"maxLength", 240}}},
              {"suggested_action", {{"type", "string"}, {"minLength", 1}, {"maxLength", 160}}}}},
            {"required", {"severity", "component", "summary", "suggested_action"}},
            {"additionalProperties", false}};
}

triage_result rule_triage(const fleet_incident & i, std::string why) {
    triage_result t;
    t.source = "rules";
    t.note = std::move(why);
    const std::string model = i.model.empty() ? "" : " (" + i.model + ")";
    const std::string reason = sanitize_text(i.reason.substr(0, i.reason.find('\n')), 80);  // the first error line
    t.severity = "medium";
    t.component = "unknown";
    t.title = i.kind;
    t.suggested_action = "Look at the evidence in this issue.";
    if (const rule * r = rule_for(i.kind)) {
        t.severity = r->severity;
        t.component = r->component;
        t.title = r->title;
        t.suggested_action = r->action;
    }
    t.title = sanitize_text(t.title + model + " on " + i.host + (reason.empty() ? "" : ": " + reason), 120);
    t.summary = sanitize_text(i.kind + " on host " + i.host + " at " + i.time + model + ": " + i.reason, 400);
    return t;
}

result<triage_result> model_triage(const fleet_incident & inc, const std::string & openai_url, const std::string & model,
                                   const std::string & host, std::chrono::milliseconds timeout, const std::string & api_key) {
    json body = {{"model", model},
                 {"messages",
                  {{{"role", "system"},
                    {"content", "You triage incidents of a fleet of LLM inference servers. Be brief and concrete."}},
                   {{"role", "user"}, {"content", prompt_for(inc)}}}},
                 {"max_tokens", 700},
                 {"temperature", 0},
                 {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "triage"}, {"strict", true}, {"schema", triage_schema()}}}}}};
    http::client_request req;
    req.method = "POST";
    req.url = openai_url + "/v1/chat/completions";
    req.headers = {"Content-Type: application/json"};
    if (!api_key.empty()) req.headers.push_back("Authorization: Bearer " + api_key);
    req.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
    req.timeout = timeout;
    auto r = http::call(req);
    if (!r.ok()) return r.err();
    if (!r->ok()) return make_error(errc::unavailable, "the triage model answered HTTP " + std::to_string(r->status));
    auto j = json::parse(r->body, nullptr, false);
    std::string content;
    if (j.is_object() && j.contains("choices") && j["choices"].is_array() && !j["choices"].empty()) {
        const json & m = j["choices"][0].value("message", json::object());
        if (m.contains("content") && m["content"].is_string()) content = m["content"].get<std::string>();
    }
    auto a = json::parse(content, nullptr, false);
    if (!a.is_object()) return make_error(errc::invalid_argument, "the triage model's answer is not a JSON object");
    for (const char * k : {"severity", "component", "summary", "suggested_action"})
        if (!a.contains(k) || !a[k].is_string()) return make_error(errc::invalid_argument, std::string("the triage model's answer lacks ") + k);
    const std::string severity = a["severity"].get<std::string>(), component = a["component"].get<std::string>();
    if (!one_of(severity, severities()) || !one_of(component, components()))
        return make_error(errc::invalid_argument, "the triage model's severity or component is not one of the allowed values");
    // The title and a known kind's classification are the rules': a model (one with random weights,
    // or a small one having a bad day) only adds its reading to the body, and only guesses the
    // classification of a kind no rule knows.
    triage_result t = rule_triage(inc, "");
    t.source = "model";
    t.model = model;
    t.host = host;
    t.note.clear();
    if (!rule_for(inc.kind)) {
        t.severity = severity;
        t.component = component;
    }
    t.summary = model_text(a["summary"].get<std::string>(), 400);
    t.suggested_action = model_text(a["suggested_action"].get<std::string>(), 300);
    if (t.summary.empty()) return make_error(errc::invalid_argument, "the triage model's summary is empty once sanitized");
    return t;
}

ojson to_json(const triage_result & t) {
    ojson j = {{"title", t.title},   {"severity", t.severity}, {"component", t.component}, {"summary", t.summary},
               {"suggested_action", t.suggested_action}, {"source", t.source}};
    if (!t.model.empty()) j["model"] = t.model;
    if (!t.host.empty()) j["host"] = t.host;
    if (!t.note.empty()) j["note"] = t.note;
    return j;
}

triage_result parse_triage(const ojson & j) {
    triage_result t;
    if (!j.is_object()) return t;
    auto s = [&](const char * k) { return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string(); };
    t.title = s("title");
    t.severity = s("severity");
    t.component = s("component");
    t.summary = s("summary");
    t.suggested_action = s("suggested_action");
    t.source = s("source");
    t.model = s("model");
    t.host = s("host");
    t.note = s("note");
    return t;
}

}  // namespace rc::fleet
