#include "fleet/host/membership.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <thread>

#include "fleet/host/server_probe.h"
#include "store/timestamps.h"
#include "util/log.h"

namespace rc::fleet {

peer_monitor::peer_monitor(etcd_client & etcd, fleet_keys keys, std::string self, std::chrono::milliseconds probe_timeout,
                           std::function<int64_t()> current_lease)
    : etcd_(etcd), keys_(std::move(keys)), self_(std::move(self)), probe_timeout_(probe_timeout), lease_(std::move(current_lease)) {}

std::vector<peer_info> peer_monitor::peers() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<peer_info> out;
    for (const auto & [id, p] : peers_) out.push_back(p);
    return out;
}

void peer_monitor::lease_changed() {
    std::lock_guard<std::mutex> lock(mu_);
    written_.clear();
}

void peer_monitor::observe(const std::string & id, const std::string & state, bool ready, const std::string & error) {
    if (id == self_) return;
    const int64_t lease = lease_();
    std::string since;
    {
        std::lock_guard<std::mutex> lock(mu_);
        auto & p = peers_[id];
        p.id = id;
        if (!p.registered && (state == "up" || state == "degraded")) return;  // a probe that finished after the peer left
        if (state == "unreachable" && (p.registered || !p.lapsed)) return;     // ... or after it came back
        if (p.state != state) {
            rc::log::info("fleet", "peer_state", {{"peer", id}, {"from", p.state}, {"to", state}, {"error", error}});
            p.state = state;
            p.since = std::chrono::system_clock::now();
        }
        p.error = error;
        since = store::format_rfc3339(p.since);
        auto w = written_.find(id);
        if (lease == 0 || (w != written_.end() && w->second == std::make_pair(state, lease))) return;
    }
    const nlohmann::ordered_json j = {{"state", state}, {"ready", ready}, {"error", error},
                                      {"checked_at", store::format_rfc3339(std::chrono::system_clock::now())}, {"since", since}};
    if (etcd_.put(keys_.health_entry(id, self_), j.dump(), lease).ok()) {
        std::lock_guard<std::mutex> lock(mu_);
        written_[id] = {state, lease};
    }
}

void peer_monitor::apply(const etcd_kv & kv, bool deleted) {
    const std::string id = fleet_keys::tail(kv.key, keys_.hosts());
    if (id.empty()) return;
    if (deleted) {
        bool probe_first;
        {
            std::lock_guard<std::mutex> lock(mu_);
            auto & p = peers_[id];
            p.id = id;
            p.registered = false;
            p.lapsed = p.record && !p.record->openai_url.empty();
            probe_first = p.lapsed;
            lapsed_backoff_.erase(id);
        }
        // With an address to try, the next probe tells unreachable (the server answers) from down.
        if (!probe_first) observe(id, "down", false, "its lease expired or was revoked (agent gone)");
        return;
    }
    auto rec = parse_host_record(kv.value);
    if (const std::string why = registration_problem(id, kv.lease, rec); !why.empty()) {
        rc::log::warn("fleet", "host_record_ignored", {{"key", kv.key}, {"why", why}, {"note", "not written by an agent: never probed"}});
        std::lock_guard<std::mutex> lock(mu_);
        peers_.erase(id);
        lapsed_backoff_.erase(id);
        return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    auto & p = peers_[id];
    p.id = id;
    p.registered = true;
    p.lapsed = false;
    lapsed_backoff_.erase(id);  // its next lapse starts probing at the probe interval again
    if (rec.ok()) p.record = rec.value();
    if (id == self_) p.state = "up";
}

bool peer_monitor::lapsed_probe_due(const std::string & id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto & b = lapsed_backoff_[id];
    if (b.rounds_to_wait == 0) return true;
    --b.rounds_to_wait;
    return false;
}

void peer_monitor::lapsed_probe_done(const std::string & id, bool answered) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = peers_.find(id);
    if (it == peers_.end() || it->second.registered || !it->second.lapsed) {  // it registered meanwhile: no backoff to keep
        lapsed_backoff_.erase(id);
        return;
    }
    auto & b = lapsed_backoff_[id];
    if (answered) {
        b = lapsed_backoff{};  // serving: probed every round, so a stop is seen at once
        return;
    }
    b.rounds_to_wait = b.next_gap - 1;
    b.next_gap = std::min(b.next_gap * 2, k_lapsed_backoff_max_rounds);
}

void peer_monitor::run_watch(const stop_fn & should_stop) {
    while (!should_stop()) {
        auto all = etcd_.get_prefix(keys_.hosts());
        if (!all.ok()) {
            for (int i = 0; i < 10 && !should_stop(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
            continue;
        }
        std::map<std::string, bool> present;
        for (const auto & kv : all->kvs) {
            apply(kv, false);
            present[fleet_keys::tail(kv.key, keys_.hosts())] = true;
        }
        std::vector<std::string> gone;
        {
            std::lock_guard<std::mutex> lock(mu_);
            for (const auto & [id, p] : peers_)
                if (p.registered && !present.count(id)) gone.push_back(id);
        }
        for (const auto & id : gone) apply(etcd_kv{keys_.host(id), {}, 0, 0, 0, 0}, true);
        int64_t next = all->revision + 1;
        while (!should_stop()) {
            auto w = etcd_.watch(
                keys_.hosts(), next,
                [&](const std::vector<etcd_event> & events, int64_t) {
                    for (const auto & e : events) {
                        apply(e.kv, e.is_delete);
                        next = std::max(next, e.kv.mod_revision + 1);
                    }
                },
                should_stop);
            if (w.ok() && !w->compacted) next = std::max(next, w->next_revision);
            if (!w.ok() || w->compacted) break;  // re-read: a member died, or history is gone
        }
        for (int i = 0; i < 4 && !should_stop(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

void peer_monitor::probe_once() {
    std::vector<peer_info> snapshot = peers();
    for (const auto & p : snapshot) {
        if (p.id == self_ || !p.record) continue;
        if (!p.registered) {
            // Probed on while it stays lapsed, with backoff: its server may come back before its
            // agent reaches etcd again, and peers must see it serving, not `down` until it registers.
            if (!p.lapsed || !lapsed_probe_due(p.id)) continue;
            ready_probe r = probe_ready(p.record->openai_url, probe_timeout_);
            lapsed_probe_done(p.id, r.ready);
            if (r.ready) {
                observe(p.id, "unreachable", true, "its lease lapsed (its agent cannot reach etcd) but its server answers");
                continue;
            }
            observe(p.id, "down", false, "its lease expired or was revoked and its server does not answer (" + r.error + ")");
            continue;
        }
        const std::string url = p.record->openai_url;
        if (url.empty()) {
            observe(p.id, "degraded", false, "it publishes no server address (server " + p.record->server.state + ")");
            continue;
        }
        ready_probe r = probe_ready(url, probe_timeout_);
        if (!r.ready) observe(p.id, "degraded", false, r.error);
        else if (!p.record->server.ready) observe(p.id, "degraded", true, "its agent reports the server " + p.record->server.state);
        else observe(p.id, "up", true, "");
    }
}

}  // namespace rc::fleet
