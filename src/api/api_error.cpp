#include "api/api_error.h"

#include <nlohmann/json.hpp>

namespace rc::api {

dialect dialect_for_path(const std::string & path) {
    return path.rfind("/api/", 0) == 0 || path == "/" ? dialect::ollama : dialect::openai;
}

void bad_request(const std::string & message, const std::string & param) { throw api_error(400, message, param); }

int http_status_for(errc code) {
    switch (code) {
        case errc::invalid_argument: return 400;
        case errc::context_overflow: return 400;
        case errc::not_found: return 404;
        case errc::unavailable: return 503;
        case errc::io: return 500;
        case errc::internal: return 500;
    }
    return 500;
}

void raise(const rc::error & err) { throw api_error(http_status_for(err.code), err.message); }

void raise_event_error(const std::string & error_code, const std::string & message) {
    throw api_error(http_status_for(errc_from_name(error_code)), message);
}

namespace {
const char * openai_type(int status) {
    switch (status) {
        case 400: return "invalid_request_error";
        case 401: return "authentication_error";
        case 403: return "permission_error";
        case 404: return "not_found_error";
        case 413: return "invalid_request_error";
        case 429: return "rate_limit_error";
        case 503: return "service_unavailable";
        default: return status >= 500 ? "server_error" : "invalid_request_error";
    }
}
}  // namespace

http_response error_response(dialect d, int status, const std::string & message, const std::string & param, const std::string & code) {
    http_response r;
    r.status = status;
    nlohmann::ordered_json body;
    if (d == dialect::ollama) {
        body["error"] = message;
    } else {
        body["error"] = {{"message", message},
                         {"type", openai_type(status)},
                         {"param", param.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(param)},
                         {"code", code.empty() ? (status == 404 ? nlohmann::ordered_json("model_not_found") : nlohmann::ordered_json(nullptr))
                                               : nlohmann::ordered_json(code)}};
    }
    r.body = body.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    return r;
}

}  // namespace rc::api
