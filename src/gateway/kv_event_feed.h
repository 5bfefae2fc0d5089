#pragma once
// Keeps the block index (block_index.h) fed from the hosts' KV events: one GET /v1/kv/events
// stream per routable host, each on its own thread (docs/GATEWAY.md "KV events").
//
// Why a stream from each host over HTTP, not etcd: the events are many (every block stored or
// evicted, thousands a minute on a busy host) and worthless a second later, which is the opposite of
// what etcd is for (small, durable, replicated state, every write through raft on every member).
// etcd stays the membership; the events go straight from each host to the gateway that needs them,
// on the port the gateway already reaches, with the host's own API keys.
//
// Contract:
// * A host is trusted (its index entries count in routing) only while its stream is connected and
//   has been heard from within `stall_after` (a tick comes every second). A stream that breaks or
//   goes quiet untrusts the host at once; the reconnect resumes from the last sequence number in
//   the same epoch (no snapshot), else a snapshot replaces what the index held for the host — a
//   restarted host (new epoch) or one the gateway fell behind.
// * follow() starts streams for new routable hosts and stops those of hosts gone, not routable or
//   moved (another address); their index entries are forgotten. Thread-safe.
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "gateway/block_index.h"
#include "gateway/host_table.h"

namespace rc::gateway {

struct kv_feed_options {
    std::string host_api_key;  // sent as a bearer key when hosts require one
    std::chrono::milliseconds stall_after{3000};
    std::chrono::milliseconds retry_after{1000};
    // Called with each load a host's events carry (running + queued, slots; -1 when not said), on the
    // stream's thread: the gateway notes it as a lookup's (host_table::note_load).
    std::function<void(const std::string & host, int busy, int slots)> on_load;
    // Called when a host's snapshot starts a new epoch (the server restarted: its context and host
    // tier start empty), on the stream's thread under the feed's lock (it must not call the feed).
    std::function<void(const std::string & host)> on_restart;
};

// What a host said about one of its models' keys: enough for the gateway to compute them.
struct model_keys {
    std::string identity;  // the KV identity digest, hex
    int block_size = 0;
};

class kv_event_feed {
  public:
    kv_event_feed(block_index & index, kv_feed_options opts) : index_(index), opts_(std::move(opts)) {}
    ~kv_event_feed() { stop(); }
    kv_event_feed(const kv_event_feed &) = delete;
    kv_event_feed & operator=(const kv_event_feed &) = delete;

    void follow(const std::vector<host_view> & hosts);
    void stop();

    bool trusted(const std::string & host) const;
    // The host's stream was heard from and is no longer trusted (it broke or went quiet): the host
    // is gone or going, so what the gateway remembers sending it earns no affinity credit.
    bool lost(const std::string & host) const;
    // What the streams of `hosts` say of `model`'s keys, under one lock (`out` parallel to `hosts`).
    struct host_keys {
        bool trusted = false;
        std::shared_ptr<const model_keys> keys;  // shared with the stream: a request copies no identity; unset where it has no source for the model
    };
    // The numbers keys_for() knows `hosts` by (a host keeps its number for the feed's lifetime, so a
    // caller resolves its hosts' names once, not per request).
    using host_number = uint32_t;
    std::vector<host_number> numbers(std::span<const host_view> hosts);
    void keys_for(const std::string & model, std::span<const host_number> hosts, std::vector<host_keys> & out) const;
    // Per host: connected, trusted, epoch, seq, snapshots, events, the last event's age.
    nlohmann::ordered_json to_json() const;

  private:
    struct source {
        std::string model;
        std::shared_ptr<const model_keys> keys;
    };
    struct stream_state {
        std::string host, url;
        std::atomic<bool> stop{false};
        std::thread thread;
        // Below: under the feed's mutex.
        bool connected = false;
        std::string epoch;
        uint64_t seq = 0;
        std::map<uint64_t, source> sources;
        steady::time_point heard{};
        uint64_t snapshots = 0, changes = 0, reconnects = 0;
    };
    bool fresh(const stream_state & s, steady::time_point now) const;  // connected, heard from within stall_after (under mu_)
    void run(const std::shared_ptr<stream_state> & s);
    void apply(stream_state & s, const std::string & event, const nlohmann::json & data);
    void apply_source(stream_state & s, const nlohmann::json & src);
    void end(std::shared_ptr<stream_state> s);
    void set_stream(const std::string & host, std::shared_ptr<stream_state> s);  // under mu_: streams_ and by_number_ together
    host_number number_of(const std::string & host);                           // under mu_

    block_index & index_;
    kv_feed_options opts_;
    mutable std::mutex mu_;
    std::map<std::string, std::shared_ptr<stream_state>> streams_;  // by host id
    std::map<std::string, host_number> numbers_;                    // never forgotten (a fleet's hosts)
    std::vector<std::shared_ptr<stream_state>> by_number_;          // streams_ by host number (null: none)
    std::map<std::string, std::string> epochs_;                     // by host id: the last epoch its snapshot said
};

}  // namespace rc::gateway
