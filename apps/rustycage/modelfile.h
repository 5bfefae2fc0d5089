#pragma once
// The subset of Ollama's Modelfile that `rustycage create -f` reads:
//   # comment
//   FROM ./model.gguf            (a GGUF path — several FROM lines are the parts of a split GGUF — or a model name)
//   TEMPLATE """...."""          (a chat template replacing the GGUF's; """…""" may span lines, "…" or bare text may not)
//   SYSTEM """...."""            (the default system prompt)
//   PARAMETER temperature 0.7    (repeatable; `stop` collects into a list)
// Instructions are case-insensitive. Others (ADAPTER, LICENSE, MESSAGE, …) are refused by name.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace rc::cli {

struct modelfile {
    std::vector<std::string> from;
    std::optional<std::string> template_text;
    std::optional<std::string> system;
    nlohmann::ordered_json parameters = nlohmann::ordered_json::object();
};

// Errors: invalid_argument naming the line and the problem.
result<modelfile> parse_modelfile(std::string_view text);

// A parameter value as typed: integers and decimals become numbers, true/false booleans, a "quoted"
// string is unquoted (JSON escapes), anything else stays a string.
nlohmann::ordered_json parse_parameter_value(std::string_view text);

// Sets `key` in `params` ("stop" appends to a list instead). Errors: invalid_argument for a key that
// is not [A-Za-z0-9_]+ or an empty value.
status add_parameter(nlohmann::ordered_json & params, std::string_view key, std::string_view value);

}  // namespace rc::cli
