#pragma once
// Turns an incident into the fields of a GitHub issue: title, severity, component, summary,
// suggested action. By a model the fleet serves (any healthy host's OpenAI endpoint, output
// constrained by a JSON schema, so even a model with random weights answers valid JSON), or, when
// no model answers usefully, by rules — and the result says which, and why.
//
// Contract: model_triage is bounded by its timeout and never throws; every string it returns is
// sanitized (control characters dropped, @mentions defused, length-capped), since a model's text
// goes verbatim into a public issue. Any thread.
#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "fleet/incidents/fleet_incident.h"
#include "util/result.h"

namespace rc::fleet {

struct triage_result {
    std::string title, severity, component, summary, suggested_action;
    std::string source;  // "model" | "rules"
    std::string model, host;  // source == model: who answered
    std::string note;         // source == rules: why not a model
};

// The JSON schema of a model's answer (severity and component are enums).
nlohmann::json triage_schema();
triage_result rule_triage(const fleet_incident & inc, std::string why_not_model);
// Errors: unavailable (no answer, HTTP error), invalid_argument (an answer that does not fit the schema).
result<triage_result> model_triage(const fleet_incident & inc, const std::string & openai_url, const std::string & model,
                                   const std::string & host, std::chrono::milliseconds timeout, const std::string & api_key = "");

// Control characters out, '@' defused, whitespace collapsed, at most `max` bytes (UTF-8 safe).
std::string sanitize_text(const std::string & text, size_t max);

nlohmann::ordered_json to_json(const triage_result & t);
triage_result parse_triage(const nlohmann::ordered_json & j);

}  // namespace rc::fleet
