#pragma once
// What the gateway reads from a client's request before routing it (pure, no I/O): the model it
// names, whether the hosts may hold KV for its prompt (then it is worth a lookup, and the lookup's
// body), and the prompt as one canonical text for the prefix index (prefix_index.h).
//
// The canonical text has the prefix property the KV cache has: a conversation resumed with more
// turns yields a text that starts with the earlier request's text. Messages are joined as
// role ␟ content ␞ (tool calls and parts included); token-id prompts as "id,id,…"; the model name
// and cache_salt come first, so different models or salts never share a prefix.
#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace rc::gateway {

struct request_shape {
    std::string model;            // as the client named it; "" when the request names none
    bool ollama = false;          // an Ollama route (/api/*, "/"): its error shapes and lookup dialect
    bool lookup = false;          // a prompt whose KV the hosts may hold: ask them (POST /v1/kv/lookup)
    nlohmann::ordered_json lookup_body;  // that lookup's body (the client's fields in their order, plus "api")
    std::string canonical;        // the prompt as text for the prefix index; empty: none
};

// `path` is the request's path; `body` its body (may be empty for GET); `query` its parameters
// (/props?model=). Errors: invalid_argument when a POST body is not a JSON object or `model` is not
// a string — the gateway answers those with a 400 itself.
result<request_shape> shape_request(const std::string & method, const std::string & path, const std::string & body,
                                    const std::multimap<std::string, std::string> & query);

// 64-bit FNV-1a of `text`, continuing from `seed` (chains of prefix hashes, spreading ties).
uint64_t fnv1a(const std::string & text, uint64_t seed = 1469598103934665603ull);

}  // namespace rc::gateway
