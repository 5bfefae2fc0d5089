#pragma once
// How Hub answers become rc::error values, in one place.
#include <string>
#include <string_view>

#include "hub/hub_config.h"
#include "hub/http_client.h"
#include "util/result.h"

namespace rc::hub {

// Maps a non-2xx response to an error naming `what` ("repository acme/x"):
//   401 ⇒ unauthenticated, 403 (and the Hub's X-Error-Code GatedRepo otherwise) ⇒ permission_denied,
//   each with a hint about HF_TOKEN — the API answers them as 401 / 403, as the Hub did;
//   404, and X-Error-Code RepoNotFound / RevisionNotFound / EntryNotFound (the Hub answers 401 for a
//   missing repository to anonymous callers) ⇒ not_found;
//   429 and 5xx ⇒ unavailable; other 4xx ⇒ invalid_argument.
// The server's own message (X-Error-Message or a JSON "error" field) is appended, shortened, with
// the token redacted.
error error_for_status(const http_response & r, std::string_view what, const hub_config & cfg);

// `text` with every occurrence of `secret` replaced by "<redacted>" (no-op for an empty secret).
std::string redact(std::string text, std::string_view secret);

}  // namespace rc::hub
