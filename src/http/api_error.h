#pragma once
// Errors as each API shapes them. Handlers throw api_error (or call the helpers); the router's one
// barrier turns it into OpenAI's {"error":{message,type,param,code}} or Ollama's {"error":"..."}.
// Once a stream has started there is no status line left to set: stream_error() is the one place
// that shapes an error as the stream's last chunk.
#include <stdexcept>
#include <string>

#include "http/http_server.h"
#include "util/result.h"

namespace rc::http {

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
// Maps an rc::error to its HTTP status and throws; `param` names the client's field it concerns.
[[noreturn]] void raise(const rc::error & err, const std::string & param = {});
int http_status_for(errc code);
// The client closed the connection while its request ran: nobody reads the answer, but the
// request still ends through the one barrier (logged and counted as 499, nginx's convention).
[[noreturn]] void client_went_away();

// OpenAI's `code`: empty picks the default ("model_not_found" for 404 — model lookups are the
// handlers' only 404 — else null).
http_response error_response(dialect d, int status, const std::string & message, const std::string & param = {},
                             const std::string & code = {});

// The last chunk of a stream that failed after it started: an SSE event
// `data: {"error":{message,type,param,code}}` (OpenAI; `code` is the errc name) or an NDJSON line
// `{"error":"..."}` (Ollama).
std::string stream_error(dialect d, const rc::error & err);

}  // namespace rc::http
