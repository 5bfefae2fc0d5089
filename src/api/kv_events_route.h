#pragma once
// GET /v1/kv/events — this server's KV events as Server-Sent Events, for the fleet gateway's block
// index (docs/GATEWAY.md "KV events"): which blocks each loaded model's tiers gained and lost.
//
//   GET /v1/kv/events                      a snapshot, then the events after it
//   GET /v1/kv/events?epoch=E&since=N      the events after N, when E is this server's epoch and N
//                                          is still in its log; else a snapshot first
//
// Each SSE event's data is one JSON object; a key is a block key's first 16 hex digits:
//
//   event: snapshot  {"epoch":"…","seq":N,"sources":[SOURCE…]}
//   event: kv        {"seq":N,"changes":[CHANGE…],"load":LOAD}   seq: the last event in the batch
//   event: tick      {"seq":N,"load":LOAD}                  a second without events
//
//   LOAD = {"running":R,"queued":Q,"slots":S}  the server's load as its lookups report it: a reader
//          routing requests has it fresh (≤ 1 s) without asking
//
//   SOURCE = {"source":1,"model":"demo","block_size":64,"identity":"<64 hex>",
//             "blocks":{"context":[KEY…],"host":[KEY…],"disk":[KEY…]}}
//   CHANGE = {"source":1,"op":"added"|"removed","tier":"context"|"host"|"disk","keys":[KEY…]}
//          | {"op":"source_added", SOURCE…}             a model loaded (with the blocks it came with)
//          | {"source":1,"op":"source_gone"}             its model unloaded: forget its blocks
//
// A reader applies the changes in order; each sets a state, so one a snapshot already shows changes
// nothing. At most 8 streams are open at once (each holds a thread and began with a snapshot): one
// more is answered 429 with Retry-After. The epoch changes when the server restarts: a reader that reconnects with an old epoch
// (or falls behind the log) gets a snapshot, and knows to forget what it held for this server. The
// stream ends when the server shuts down.
#include <vector>

#include "api/api_context.h"
#include "http/http_server.h"

namespace rc::api {
using namespace rc::http;  // written against the HTTP shell (src/http)

std::vector<route> kv_events_routes(api_context & ctx);

}  // namespace rc::api
