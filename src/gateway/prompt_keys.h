#pragma once
// What each candidate host holds of a request's prompt, computed by the gateway from its block
// index — no host asked (docs/GATEWAY.md "Routing from the index"):
//   1. the body is rendered and tokenized once, by the hosts' own reader (api/request_prompt.h)
//      over the model's vocabulary (model_vocabs.h);
//   2. for each KV identity among the candidates (a host announces its identity digest and block
//      size per model in its event stream; hosts with the same file and cache layout share one),
//      the block key chain is computed once (kv/block_key.h: the root from identity + cache_salt);
//   3. the chain is walked against the block index; a host's answer is what its lookup would say
//      of its host-RAM and disk tiers (blocks resident in the context are in host RAM too: the
//      engine writes each full block below as soon as it fills).
// A host is answered from the index only while its event stream is trusted, it announced the
// model and its index did not overflow; the other candidates are left for a lookup.
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gateway/block_index.h"
#include "gateway/kv_event_feed.h"
#include "gateway/model_vocabs.h"
#include "gateway/route_planner.h"
#include "gateway/route_view.h"

namespace rc::gateway {

struct indexed_prompt {
    bool rendered = false;  // false: the body did not render (every candidate is left to ask)
    int prompt_tokens = 0;
    std::vector<std::optional<kv_answer>> answers;  // parallel to the candidates; unset: left for a lookup
    int chains = 0;                                 // key chains computed (one per KV identity)
};

// The index keys (short_key) of the full blocks of `tokens` on hosts of KV identity `identity_hex`
// (64 hex digits) with `block_size`-token blocks, chained from `cache_salt`. Empty when the
// identity is not a digest.
std::vector<short_key> prompt_chain(const std::string & identity_hex, int block_size, const std::string & cache_salt, std::span<const int32_t> tokens);

// `body` is the lookup body (request_shape::lookup_body: the client's fields and "api").
// Answers for `view`'s candidates (indexed_prompt::answers parallel to view.hosts()).
indexed_prompt answer_from_index(const model_vocab & vocab, const nlohmann::ordered_json & body, const route_view & view, const kv_event_feed & feed,
                                 const block_index & index);

}  // namespace rc::gateway
