#include "http/api_error.h"

#include <nlohmann/json.hpp>

namespace rc::http {

namespace {

using json = nlohmann::ordered_json;

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

json openai_error(int status, const std::string & message, const std::string & param, json code) {
    return json{{"error",
                 {{"message", message},
                  {"type", openai_type(status)},
                  {"param", param.empty() ? json(nullptr) : json(param)},
                  {"code", std::move(code)}}}};
}

std::string dump(const json & j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace

dialect dialect_for_path(const std::string & path) {
    return path.rfind("/api/", 0) == 0 || path == "/" ? dialect::ollama : dialect::openai;
}

void bad_request(const std::string & message, const std::string & param) { throw api_error(400, message, param); }

int http_status_for(errc code) {
    switch (code) {
        case errc::invalid_argument: return 400;
        case errc::context_overflow: return 400;
        case errc::unauthenticated: return 401;
        case errc::permission_denied: return 403;
        case errc::not_found: return 404;
        case errc::unavailable: return 503;
        case errc::data_loss: return 502;  // bytes from upstream (the Hub) were corrupt: a retry may work
        case errc::io: return 500;
        case errc::internal: return 500;
    }
    return 500;
}

void client_went_away() { throw api_error(499, "the client closed the connection"); }

void raise(const rc::error & err, const std::string & param) { throw api_error(http_status_for(err.code), err.message, param); }

http_response error_response(dialect d, int status, const std::string & message, const std::string & param, const std::string & code) {
    http_response r;
    r.status = status;
    if (d == dialect::ollama) {
        r.body = dump(json{{"error", message}});
    } else {
        json c = code.empty() ? (status == 404 ? json("model_not_found") : json(nullptr)) : json(code);
        r.body = dump(openai_error(status, message, param, std::move(c)));
    }
    return r;
}

std::string stream_error(dialect d, const rc::error & err) {
    if (d == dialect::ollama) return dump(json{{"error", err.message}}) + "\n";
    return "data: " + dump(openai_error(http_status_for(err.code), err.message, {}, errc_name(err.code))) + "\n\n";
}

}  // namespace rc::http
