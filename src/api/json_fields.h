#pragma once
// Typed reads of request JSON with errors that name the field (DESIGN.md §6: bad input gets a clear
// 4xx naming what was wrong). Unknown fields are ignored; wrong types are rejected.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "api/http_server.h"

namespace rc::api {

using json = nlohmann::ordered_json;

// The body as a JSON object; 400 when it is not valid JSON (incl. invalid UTF-8) or not an object.
json parse_body(const http_request & req);

// Each returns nullopt when the field is absent or null; throws a 400 naming `key` on a wrong type
// or a value outside [min, max].
std::optional<std::string> opt_string(const json & j, const char * key);
std::optional<bool> opt_bool(const json & j, const char * key);
std::optional<double> opt_number(const json & j, const char * key, double min, double max);
std::optional<long long> opt_int(const json & j, const char * key, long long min, long long max);

std::string require_string(const json & j, const char * key);

// A string or a list of strings (OpenAI `stop`, Ollama `stop`).
std::vector<std::string> opt_string_list(const json & j, const char * key, size_t max_items);

// JSON text; non-UTF-8 bytes replaced (for text produced by a model).
std::string dump(const json & j);

}  // namespace rc::api
