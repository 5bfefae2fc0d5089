// A request body through parse_body and the typed field readers every route uses (http/json_fields):
// bad input may only end in api_error (a 4xx); any other exception or crash is a bug.
#include <cstdint>
#include <string>
#include <vector>

#include "http/api_error.h"
#include "http/json_fields.h"

namespace {

template <typename F>
void expect_4xx_or_value(F && read) {
    try {
        read();
    } catch (const rc::http::api_error & e) {
        if (e.status < 400 || e.status >= 500) __builtin_trap();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    rc::http::http_request req;
    req.method = "POST";
    req.path = "/v1/chat/completions";
    req.body.assign(reinterpret_cast<const char *>(data), size);
    rc::http::json body;
    try {
        body = rc::http::parse_body(req);
    } catch (const rc::http::api_error & e) {
        if (e.status != 400) __builtin_trap();
        return 0;
    }
    // Every reader on every key the body has (each meets every JSON type), plus the usual names.
    std::vector<std::string> keys = {"model", "stream", "temperature", "max_tokens", "stop", "prompt"};
    for (auto it = body.begin(); it != body.end() && keys.size() < 64; ++it) keys.push_back(it.key());
    for (const auto & k : keys) {
        const char * key = k.c_str();
        expect_4xx_or_value([&] { (void) rc::http::opt_string(body, key); });
        expect_4xx_or_value([&] { (void) rc::http::opt_bool(body, key); });
        expect_4xx_or_value([&] { (void) rc::http::opt_number(body, key, -2, 2); });
        expect_4xx_or_value([&] { (void) rc::http::opt_int(body, key, -1, 1 << 24); });
        expect_4xx_or_value([&] { (void) rc::http::opt_int(body, key, INT64_MIN, INT64_MAX); });
        expect_4xx_or_value([&] { (void) rc::http::opt_string_list(body, key, 16); });
        expect_4xx_or_value([&] { (void) rc::http::require_string(body, key); });
    }
    (void) rc::http::dump(body);
    return 0;
}
