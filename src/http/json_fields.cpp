#include "http/json_fields.h"

#include <cmath>
#include <string_view>

#include "http/api_error.h"

namespace rc::http {

namespace {

// Depth, value count and key cost of JSON text without building it: one pass that skips strings
// (escapes included). Commas and openings count the values closely enough for a bound; a ':' at an
// object's level is one of its keys, and the k-th key of an object costs k comparisons to insert
// (nlohmann's ordered map finds a key by scanning), so the keys of all objects together may cost at
// most max_json_key_comparisons. Stops at the first level past the limit, so a 100,000-deep body
// costs no more than its first 64 brackets. `what` names the text in errors.
void check_shape(std::string_view text, const std::string & what, const std::string & field) {
    int depth = 0;
    size_t values = 1;
    bool in_string = false;
    bool is_object[max_json_depth + 1] = {false};
    size_t keys[max_json_depth + 1] = {0};
    size_t comparisons = 0;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') ++i;
            else if (c == '"') in_string = false;
            continue;
        }
        switch (c) {
            case '"': in_string = true; break;
            case '{':
            case '[':
                if (++depth > max_json_depth)
                    bad_request(what + " is nested deeper than " + std::to_string(max_json_depth) + " levels", field);
                is_object[depth] = c == '{';
                keys[depth] = 0;
                ++values;
                break;
            case '}':
            case ']':
                if (depth > 0) --depth;
                break;
            case ':':
                if (depth > 0 && is_object[depth]) {
                    comparisons += keys[depth]++;
                    if (comparisons > max_json_key_comparisons)
                        throw api_error(413, what + " has objects with too many keys (" + std::to_string(keys[depth]) +
                                                 " in one; the keys of all objects together may cost at most " +
                                                 std::to_string(max_json_key_comparisons) + " comparisons: one object of " +
                                                 std::to_string(max_json_object_keys) + " keys)");
                }
                break;
            case ',': ++values; break;
            default: break;
        }
    }
    if (values > max_json_values)
        throw api_error(413, what + " holds more than " + std::to_string(max_json_values) + " JSON values");
}

}  // namespace

std::optional<json> parse_json_bounded(const std::string & text) {
    try {
        check_shape(text, "JSON text", {});
        json j = json::parse(text, nullptr, false);
        if (j.is_discarded()) return std::nullopt;
        return j;
    } catch (const std::exception &) {
        return std::nullopt;
    }
}

json parse_body(const http_request & req) {
    if (req.body.empty()) bad_request("request body is empty; expected a JSON object");
    check_shape(req.body, "request body", {});
    json j;
    try {
        j = json::parse(req.body);
    } catch (const std::exception & e) {
        bad_request(std::string("request body is not valid JSON: ") + e.what());
    }
    if (!j.is_object()) bad_request("request body must be a JSON object");
    return j;
}

void check_json_text(const std::string & text, const std::string & field) { check_shape(text, "'" + field + "'", field); }

namespace {
const json * find(const json & j, const char * key) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return nullptr;
    return &*it;
}
}  // namespace

std::optional<std::string> opt_string(const json & j, const char * key) {
    const json * v = find(j, key);
    if (!v) return std::nullopt;
    if (!v->is_string()) bad_request(std::string("'") + key + "' must be a string", key);
    return v->get<std::string>();
}

std::optional<bool> opt_bool(const json & j, const char * key) {
    const json * v = find(j, key);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) bad_request(std::string("'") + key + "' must be a boolean", key);
    return v->get<bool>();
}

std::optional<double> opt_number(const json & j, const char * key, double min, double max) {
    const json * v = find(j, key);
    if (!v) return std::nullopt;
    if (!v->is_number()) bad_request(std::string("'") + key + "' must be a number", key);
    double d = v->get<double>();
    if (!std::isfinite(d) || d < min || d > max) {
        bad_request(std::string("'") + key + "' must be between " + dump(json(min)) + " and " + dump(json(max)), key);
    }
    return d;
}

std::optional<long long> opt_int(const json & j, const char * key, long long min, long long max) {
    const json * v = find(j, key);
    if (!v) return std::nullopt;
    auto out_of_range = [&] {
        bad_request(std::string("'") + key + "' must be between " + std::to_string(min) + " and " + std::to_string(max), key);
    };
    if (v->is_number_float()) {
        double d = v->get<double>();
        if (std::floor(d) != d) bad_request(std::string("'") + key + "' must be an integer", key);
        if (d < static_cast<double>(min) || d > static_cast<double>(max)) out_of_range();
        return static_cast<long long>(d);
    }
    if (!v->is_number_integer()) bad_request(std::string("'") + key + "' must be an integer", key);
    if (v->is_number_unsigned() && v->get<unsigned long long>() > static_cast<unsigned long long>(max)) out_of_range();
    long long n = v->get<long long>();
    if (n < min || n > max) out_of_range();
    return n;
}

std::string require_string(const json & j, const char * key) {
    auto v = opt_string(j, key);
    if (!v) bad_request(std::string("'") + key + "' is required", key);
    return *v;
}

std::vector<std::string> opt_string_list(const json & j, const char * key, size_t max_items) {
    const json * v = find(j, key);
    std::vector<std::string> out;
    if (!v) return out;
    if (v->is_string()) {
        out.push_back(v->get<std::string>());
    } else if (v->is_array()) {
        for (const auto & s : *v) {
            if (!s.is_string()) bad_request(std::string("'") + key + "' must be a string or a list of strings", key);
            out.push_back(s.get<std::string>());
        }
    } else {
        bad_request(std::string("'") + key + "' must be a string or a list of strings", key);
    }
    if (out.size() > max_items) bad_request(std::string("'") + key + "' has more than " + std::to_string(max_items) + " items", key);
    return out;
}

std::vector<int32_t> read_token_ids(const json & arr, const std::string & field) {
    if (!arr.is_array()) bad_request("'" + field + "' must be an array of token ids", field);
    std::vector<int32_t> out;
    out.reserve(arr.size());
    for (const auto & t : arr) {
        // Unsigned values above INT64_MAX read as negative through get<long long>: check the kind first.
        bool in_range = t.is_number_unsigned() ? t.get<unsigned long long>() <= 0x7fffffffULL
                                               : t.is_number_integer() && t.get<long long>() >= 0 && t.get<long long>() <= 0x7fffffffLL;
        if (!in_range) bad_request("'" + field + "' must hold token ids: integers from 0 below the vocabulary size", field);
        out.push_back(static_cast<int32_t>(t.get<long long>()));
    }
    return out;
}

std::string dump(const json & j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace rc::http
