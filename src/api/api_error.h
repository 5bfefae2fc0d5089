#pragma once
// Errors as each API shapes them. Handlers throw api_error (or call the helpers); the router's one
// barrier turns it into OpenAI's {"error":{message,type,param,code}} or Ollama's {"error":"..."}.
#include <stdexcept>
#include <string>

#include "api/http_server.h"
#include "util/result.h"

namespace rc::api {

enum class dialect { openai, ollama };

// Ollama's routes live under /api/ and "/"; everything else speaks OpenAI's error shape.
dialect dialect_for_path(const std::string & path);

struct api_error : std::runtime_error {
    int status;
    std::string param;
    api_error(int status_, const std::string & message, std::string param_ = {})
        : std::runtime_error(message), status(status_), param(std::move(param_)) {}
};

[[noreturn]] void bad_request(const std::string & message, const std::string & param = {});
// Maps an rc::error to its HTTP status and throws.
[[noreturn]] void raise(const rc::error & err);
int http_status_for(errc code);
// Throws for an engine error event (its error_code is an errc name).
[[noreturn]] void raise_event_error(const std::string & error_code, const std::string & message);

// OpenAI's `code`: empty picks the default ("model_not_found" for 404 — model lookups are the
// handlers' only 404 — else null).
http_response error_response(dialect d, int status, const std::string & message, const std::string & param = {},
                             const std::string & code = {});

}  // namespace rc::api
