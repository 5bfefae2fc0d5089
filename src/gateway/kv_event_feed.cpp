#include "gateway/kv_event_feed.h"

#include <algorithm>
#include <cstdint>
#include <set>

#include "http/http_client.h"
#include "util/log.h"

namespace rc::gateway {

using json = nlohmann::json;

namespace {

constexpr size_t max_event_bytes = size_t{256} << 20;

std::vector<short_key> parse_keys(const json & keys) {
    std::vector<short_key> out;
    if (!keys.is_array()) return out;
    out.reserve(keys.size());
    for (const auto & k : keys) {
        short_key v;
        if (k.is_string() && parse_short_key(k.get<std::string>(), v)) out.push_back(v);
    }
    return out;
}

}  // namespace

void kv_event_feed::apply_source(stream_state & s, const json & src) {
    const uint64_t id = src.value("source", uint64_t{0});
    source so{src.value("model", ""), std::make_shared<const model_keys>(model_keys{src.value("identity", ""), src.value("block_size", 0)})};
    if (so.model.empty()) return;
    s.sources[id] = so;
    if (const auto & blocks = src.value("blocks", json::object()); blocks.is_object())
        for (const auto & [tier, keys] : blocks.items())
            if (uint8_t bit = tier_bit_of(tier)) index_.add(s.host, so.model, bit, parse_keys(keys));
}

void kv_event_feed::apply(stream_state & s, const std::string & event, const json & data) {
    if (!data.is_object()) return;
    // The host's load, fresh with every batch and tick: what routing weighs without asking.
    if (auto l = data.find("load"); l != data.end() && l->is_object() && opts_.on_load) {
        // Bounded: a host cannot make its count wrap (or outweigh the fleet) by a huge number.
        auto count = [&](const char * k) { return l->contains(k) && (*l)[k].is_number_unsigned() ? static_cast<int>(std::min<uint64_t>((*l)[k].get<uint64_t>(), 1u << 16)) : -1; };
        const int running = count("running"), queued = count("queued"), slots = count("slots");
        if (running >= 0 && queued >= 0) opts_.on_load(s.host, running + queued, slots);
    }
    std::lock_guard lock(mu_);
    s.connected = true;
    s.heard = steady::now();
    s.seq = data.value("seq", s.seq);
    if (event == "snapshot") {
        // The host's blocks as they are: whatever the index held for it goes.
        index_.forget(s.host);
        s.sources.clear();
        s.epoch = data.value("epoch", "");
        // Remembered across streams: a killed host's stream ends, and its restart opens a new one.
        std::string & last = epochs_[s.host];
        const bool restarted = !last.empty() && s.epoch != last;
        last = s.epoch;
        ++s.snapshots;
        for (const auto & src : data.value("sources", json::array())) apply_source(s, src);
        if (restarted && opts_.on_restart) opts_.on_restart(s.host);
        return;
    }
    if (event != "kv") return;  // a tick: heard from
    for (const auto & c : data.value("changes", json::array())) {
        ++s.changes;
        const std::string op = c.value("op", "");
        const uint64_t id = c.value("source", uint64_t{0});
        if (op == "source_added") {
            apply_source(s, c);
            continue;
        }
        auto it = s.sources.find(id);
        if (it == s.sources.end()) continue;
        if (op == "source_gone") {
            index_.forget(s.host, it->second.model);
            s.sources.erase(it);
            continue;
        }
        const uint8_t bit = tier_bit_of(c.value("tier", ""));
        if (bit == 0) continue;
        const auto keys = parse_keys(c.value("keys", json::array()));
        if (op == "added") index_.add(s.host, it->second.model, bit, keys);
        else if (op == "removed") index_.remove(s.host, it->second.model, bit, keys);
    }
}

void kv_event_feed::run(const std::shared_ptr<stream_state> & s) {
    while (!s->stop) {
        http::client_request r;
        {
            std::lock_guard lock(mu_);
            r.url = s->url + "/v1/kv/events" + (s->epoch.empty() ? "" : "?epoch=" + s->epoch + "&since=" + std::to_string(s->seq));
        }
        r.timeout = std::chrono::milliseconds(0);
        r.connect_timeout = std::chrono::milliseconds(1000);
        r.stall_timeout = opts_.stall_after;  // a tick comes every second: silence is a lost stream
        if (!opts_.host_api_key.empty()) r.headers.push_back("Authorization: Bearer " + opts_.host_api_key);
        std::string pending, malformed;
        auto reply = http::stream(r, [&](std::string_view d) {
            // One event (a snapshot of a million blocks is about 20 MiB) never needs more: a host
            // sending a line without end is cut off and asked again.
            if (pending.size() + d.size() > max_event_bytes) return false;
            pending.append(d);
            for (size_t end; (end = pending.find("\n\n")) != std::string::npos;) {
                std::string event, data;
                for (size_t at = 0; at < end;) {
                    size_t nl = pending.find('\n', at);
                    if (nl == std::string::npos || nl > end) nl = end;
                    const std::string_view line(pending.data() + at, nl - at);
                    if (line.starts_with("event: ")) event = line.substr(7);
                    else if (line.starts_with("data: ")) data = line.substr(6);
                    at = nl + 1;
                }
                pending.erase(0, end + 2);
                try {
                    apply(*s, event, json::parse(data, nullptr, false));
                } catch (const json::exception & e) {  // a field of the wrong type
                    malformed = e.what();
                    return false;
                }
            }
            return !s->stop;
        }, [&] { return s->stop.load(); });
        bool supported = true;
        {
            std::lock_guard lock(mu_);
            s->connected = false;  // untrusted until the stream is back
            ++s->reconnects;
            if (!malformed.empty()) s->epoch.clear();  // what was applied of it is suspect: start over from a snapshot
            if (reply && (reply->status == 404 || reply->status == 401 || reply->status == 403)) supported = false;
        }
        if (!malformed.empty()) rc::log::warn("gateway", "kv_events_malformed", {{"host", s->host}, {"error", malformed}});
        if (!s->stop && !supported)
            rc::log::debug("gateway", "kv_events_unavailable", {{"host", s->host}, {"status", reply->status}});
        // Back off: longer for a host that does not serve events (an older version, or a key missing).
        const auto wait = supported ? opts_.retry_after : 10 * opts_.retry_after;
        for (auto until = steady::now() + wait; !s->stop && steady::now() < until;) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

void kv_event_feed::end(std::shared_ptr<stream_state> s) {
    s->stop = true;
    if (s->thread.joinable()) s->thread.join();
    index_.forget(s->host);
}

void kv_event_feed::follow(const std::vector<host_view> & hosts) {
    std::vector<std::shared_ptr<stream_state>> ending;
    std::vector<const host_view *> starting;
    {
        std::lock_guard lock(mu_);
        std::set<std::string> wanted;
        for (const auto & h : hosts) {
            if (!h.routable()) continue;
            wanted.insert(h.id);
            auto it = streams_.find(h.id);
            if (it != streams_.end() && it->second->url == h.url) continue;
            if (it != streams_.end()) {
                ending.push_back(it->second);
                set_stream(h.id, nullptr);
            }
            starting.push_back(&h);
        }
        for (auto it = streams_.begin(); it != streams_.end();) {
            if (wanted.count(it->first)) {
                ++it;
                continue;
            }
            ending.push_back(it->second);
            by_number_[number_of(it->first)] = nullptr;
            it = streams_.erase(it);
        }
    }
    for (auto & s : ending) end(s);  // before a moved host's new stream fills the index again
    for (const host_view * h : starting) {
        auto s = std::make_shared<stream_state>();
        s->host = h->id;
        s->url = h->url;
        std::lock_guard lock(mu_);
        set_stream(h->id, s);
        s->thread = std::thread([this, s] { run(s); });
    }
}

void kv_event_feed::stop() {
    std::map<std::string, std::shared_ptr<stream_state>> all;
    {
        std::lock_guard lock(mu_);
        all.swap(streams_);
        by_number_.assign(by_number_.size(), nullptr);
    }
    for (auto & [id, s] : all) end(s);
}

bool kv_event_feed::fresh(const stream_state & s, steady::time_point now) const { return s.connected && now - s.heard < opts_.stall_after; }

bool kv_event_feed::trusted(const std::string & host) const {
    std::lock_guard lock(mu_);
    auto it = streams_.find(host);
    return it != streams_.end() && fresh(*it->second, steady::now());
}

bool kv_event_feed::lost(const std::string & host) const {
    std::lock_guard lock(mu_);
    auto it = streams_.find(host);
    return it != streams_.end() && it->second->heard != steady::time_point{} && !fresh(*it->second, steady::now());
}

kv_event_feed::host_number kv_event_feed::number_of(const std::string & host) {
    auto it = numbers_.try_emplace(host, static_cast<host_number>(numbers_.size())).first;
    if (by_number_.size() <= it->second) by_number_.resize(it->second + 1);
    return it->second;
}

void kv_event_feed::set_stream(const std::string & host, std::shared_ptr<stream_state> s) {
    by_number_[number_of(host)] = s;
    if (s) streams_[host] = std::move(s);
    else streams_.erase(host);
}

std::vector<kv_event_feed::host_number> kv_event_feed::numbers(std::span<const host_view> hosts) {
    std::lock_guard lock(mu_);
    std::vector<host_number> out;
    out.reserve(hosts.size());
    for (const auto & h : hosts) out.push_back(number_of(h.id));
    return out;
}

void kv_event_feed::keys_for(const std::string & model, std::span<const host_number> hosts, std::vector<host_keys> & out) const {
    out.assign(hosts.size(), {});
    std::lock_guard lock(mu_);
    const auto now = steady::now();
    for (size_t i = 0; i < hosts.size(); ++i) {
        const stream_state * s = hosts[i] < by_number_.size() ? by_number_[hosts[i]].get() : nullptr;
        if (!s || !fresh(*s, now)) continue;
        out[i].trusted = true;
        for (const auto & [id, src] : s->sources)
            if (src.model == model) out[i].keys = src.keys;
    }
}

nlohmann::ordered_json kv_event_feed::to_json() const {
    std::lock_guard lock(mu_);
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    const auto now = steady::now();
    for (const auto & [id, s] : streams_) {
        nlohmann::ordered_json models = nlohmann::ordered_json::array();
        for (const auto & [sid, so] : s->sources) models.push_back(so.model);
        out[id] = {{"connected", s->connected},
                   {"trusted", fresh(*s, now)},
                   {"epoch", s->epoch},
                   {"seq", s->seq},
                   {"models", models},
                   {"snapshots", s->snapshots},
                   {"changes", s->changes},
                   {"reconnects", s->reconnects},
                   {"heard_ms_ago", s->heard == steady::time_point{} ? -1 : std::chrono::duration_cast<std::chrono::milliseconds>(now - s->heard).count()}};
    }
    return out;
}

}  // namespace rc::gateway
