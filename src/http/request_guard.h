#pragma once
// What every listener checks before routing, shared by `serve` (api_server.h) and the fleet gateway:
// CORS (incl. the official clients' x-stainless-* headers) and API-key auth with constant-time
// comparison. Keys travel in a header, so check_api_keys refuses what could be misread.
#include <memory>
#include <string>
#include <vector>

#include "http/http_server.h"
#include "util/result.h"

namespace rc::http {

// Keys are compared as sent in an HTTP header: each must be non-empty printable ASCII without
// spaces (trim them first). Errors: invalid_argument saying which key is wrong and why (never the key).
status check_api_keys(const std::vector<std::string> & keys);

// `http_server_options::before`: answers a CORS preflight (204 + Allow-* headers), and a request
// without an accepted key (401 in the path's dialect) unless `keys` is empty or the path is public.
// Null: route it.
std::unique_ptr<http_response> guard_request(const http_request & req, const std::vector<std::string> & keys, bool is_public);

// The CORS headers of every response (the request's Origin, or *).
void add_cors(http_response & r, const http_request & req);

}  // namespace rc::http
