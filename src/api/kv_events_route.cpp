#include "api/kv_events_route.h"
#include "api/kv_lookup_route.h"

#include <atomic>
#include <memory>

#include "http/api_error.h"
#include "http/json_fields.h"
#include "http/stream_writer.h"

namespace rc::api {
using namespace rc::http;  // written against the HTTP shell (src/http)

namespace {

using kv::kv_event;
using kv::kv_event_log;

constexpr size_t max_batch = 4096;                  // events in one SSE event
constexpr auto tick_every = std::chrono::seconds(1);  // the wait for events before a tick
// Each stream holds a thread and starts with a snapshot taken under the tiers' locks: a gateway
// needs one (a few for redundant gateways); more readers than this are refused with 429.
constexpr int max_readers = 8;

// A reader's slot among the server's open streams (api_context::kv_event_readers, every port's),
// held from its request to its stream's end.
class reader_slot {
  public:
    explicit reader_slot(std::shared_ptr<std::atomic<int>> open) : open_(std::move(open)) {}
    ~reader_slot() { open_->fetch_sub(1); }
    reader_slot(const reader_slot &) = delete;
    reader_slot & operator=(const reader_slot &) = delete;

  private:
    std::shared_ptr<std::atomic<int>> open_;
};


const char * tier_text(kv::tier_name t) {
    switch (t) {
        case kv::tier_name::context: return "context";
        case kv::tier_name::host: return "host";
        case kv::tier_name::disk: return "disk";
    }
    return "host";
}

std::string sse_event(const char * name, const json & data) { return std::string("event: ") + name + "\ndata: " + dump(data) + "\n\n"; }

// Each source of a snapshot with its blocks by tier.
json sources_json(const kv_event_log::snapshot_result & snap) {
    std::map<uint32_t, json> blocks;
    for (const auto & [id, info] : snap.sources) blocks[id] = json::object();
    for (const auto & b : snap.blocks) blocks[b.source][tier_text(b.tier)].push_back(kv::event_key_hex(b.key));
    json out = json::array();
    for (const auto & [id, info] : snap.sources)
        out.push_back({{"source", id}, {"model", info.model}, {"block_size", info.block_size}, {"identity", info.identity}, {"blocks", blocks[id]}});
    return out;
}

const char * op_text(kv_event::kind k) {
    switch (k) {
        case kv_event::kind::added: return "added";
        case kv_event::kind::removed: return "removed";
        case kv_event::kind::source_added: return "source_added";
        case kv_event::kind::source_gone: return "source_gone";
    }
    return "added";
}

// A batch of events as changes: consecutive events of one source, op and tier share a change.
json changes_json(const kv_event_log & log, const std::vector<kv_event> & events) {
    json out = json::array();
    for (size_t i = 0; i < events.size();) {
        const kv_event & e = events[i];
        if (e.what == kv_event::kind::source_added) {
            const json added = sources_json(log.snapshot(e.source));
            json change = added.empty() ? json{{"source", e.source}, {"blocks", json::object()}} : added[0];
            change["op"] = op_text(e.what);
            out.push_back(std::move(change));
            ++i;
            continue;
        }
        if (e.what == kv_event::kind::source_gone) {
            out.push_back({{"source", e.source}, {"op", op_text(e.what)}});
            ++i;
            continue;
        }
        json keys = json::array();
        size_t j = i;
        for (; j < events.size() && events[j].source == e.source && events[j].what == e.what && events[j].tier == e.tier; ++j)
            keys.push_back(kv::event_key_hex(events[j].key));
        out.push_back({{"source", e.source}, {"op", op_text(e.what)}, {"tier", tier_text(e.tier)}, {"keys", std::move(keys)}});
        i = j;
    }
    return out;
}

std::optional<uint64_t> query_number(const http_request & req, const char * name) {
    auto it = req.query.find(name);
    if (it == req.query.end()) return std::nullopt;
    try {
        size_t used = 0;
        const unsigned long long v = std::stoull(it->second, &used);
        if (used == it->second.size() && !it->second.empty() && it->second[0] != '-') return v;
    } catch (const std::exception &) {
    }
    bad_request(std::string("'") + name + "' must be a non-negative integer", name);
}

http_response events(api_context & ctx, const http_request & req) {
    auto log = ctx.models.engine_options().kv.events;
    if (!log) raise(make_error(errc::unavailable, "this server keeps no KV events"));
    auto epoch = req.query.find("epoch");
    const auto since = query_number(req, "since");
    std::optional<uint64_t> resume;
    if (since && epoch != req.query.end() && epoch->second == log->epoch() && *since <= log->last_seq()) resume = since;
    if (ctx.kv_event_readers->fetch_add(1) >= max_readers) {
        ctx.kv_event_readers->fetch_sub(1);
        throw api_error(429, "this server already streams its KV events to " + std::to_string(max_readers) + " readers; retry later");
    }
    auto slot = std::make_shared<reader_slot>(ctx.kv_event_readers);  // released when the stream (or a response never streamed) ends
    return streamed_response("text/event-stream", {}, [&ctx, log, resume, slot, stopping = ctx.stopping](stream_writer & w) {
        uint64_t seq = 0;
        auto send_snapshot = [&] {
            const auto snap = log->snapshot();
            seq = snap.seq;
            return w.write(sse_event("snapshot", {{"epoch", log->epoch()}, {"seq", snap.seq}, {"sources", sources_json(snap)}}));
        };
        if (resume) seq = *resume;
        else if (!send_snapshot()) return;
        while (w.alive() && !stopping->load()) {
            auto batch = log->read(seq, max_batch, tick_every);
            if (batch.gap) {
                if (!send_snapshot()) return;  // fell behind the log: start again from the tiers as they are
                continue;
            }
            if (batch.events.empty()) {
                if (!w.write(sse_event("tick", {{"seq", seq}, {"load", server_load(ctx)}}))) return;
                continue;
            }
            seq = batch.events.back().seq;
            if (!w.write(sse_event("kv", {{"seq", seq}, {"changes", changes_json(*log, batch.events)}, {"load", server_load(ctx)}}))) return;
        }
    });
}

}  // namespace

std::vector<route> kv_events_routes(api_context & ctx) {
    return {{"GET", "/v1/kv/events", [&ctx](const http_request & req) { return events(ctx, req); }}};
}

}  // namespace rc::api
