#pragma once
// Typed reads of request JSON with errors that name the field (ARCHITECTURE.md §6: bad input gets a clear
// 4xx naming what was wrong). Unknown fields are ignored; wrong types are rejected.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "http/http_server.h"

namespace rc::http {

using json = nlohmann::ordered_json;

// Every request body is parsed here, and only here, within these bounds. The depth bound is what
// keeps recursion reachable from a request (nlohmann's dump, llama.cpp's JSON-schema converter,
// which crashes near 20,000 levels, the chat template engine) shallow; the value bound caps what a
// body may cost in memory once parsed (a value takes 16+ bytes as a DOM, two in the text).
inline constexpr int max_json_depth = 64;
inline constexpr size_t max_json_values = size_t{1} << 22;
// Inserting the k-th key of an object scans the k-1 before it (nlohmann's ordered map keeps the
// client's order, which tool schemas and templates need), so keys cost k²/2 comparisons per object:
// 50,000 keys took 28 s. The keys of a body together may cost at most this many comparisons (about
// 0.2 s): one object of max_json_object_keys keys, 64 of 512, any number of small ones.
inline constexpr size_t max_json_object_keys = 4096;
inline constexpr size_t max_json_key_comparisons = max_json_object_keys * max_json_object_keys / 2;

// The body as a JSON object; 400 when it is not valid JSON (incl. invalid UTF-8), not an object, or
// nested deeper than max_json_depth; 413 beyond max_json_values or the key bound. The limits are checked by a scan of
// the text before anything is built.
json parse_body(const http_request & req);

// JSON text inside a string that llama.cpp parses again (a tool call's `arguments`, which chat
// templates read as an object) under the same bounds as a body: 400 naming `field` when nested
// deeper than max_json_depth, 413 beyond the value or key bounds. Text that is not JSON passes.
void check_json_text(const std::string & text, const std::string & field);

// JSON text from elsewhere (a model's tool-call arguments) under the same bounds; nullopt when it is
// not JSON or nested too deep. Never throws.
std::optional<json> parse_json_bounded(const std::string & text);

// Each returns nullopt when the field is absent or null; throws a 400 naming `key` on a wrong type
// or a value outside [min, max].
std::optional<std::string> opt_string(const json & j, const char * key);
std::optional<bool> opt_bool(const json & j, const char * key);
std::optional<double> opt_number(const json & j, const char * key, double min, double max);
std::optional<long long> opt_int(const json & j, const char * key, long long min, long long max);

std::string require_string(const json & j, const char * key);

// A string or a list of strings (OpenAI `stop`, Ollama `stop`).
std::vector<std::string> opt_string_list(const json & j, const char * key, size_t max_items);

// A JSON array of token ids as integers in [0, 2^31): ids that would wrap around 32 bits (4294967301
// is not token 5) or are negative are a 400 naming `field`. Whether each id is in the vocabulary is
// the model's question (generation_session asks it).
std::vector<int32_t> read_token_ids(const json & arr, const std::string & field);

// JSON text; non-UTF-8 bytes replaced (for text produced by a model).
std::string dump(const json & j);

}  // namespace rc::http
