#include "gateway/host_table.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "fleet/host/server_probe.h"
#include "gateway/request_shape.h"
#include "util/log.h"
#include "store/model_name.h"

namespace rc::gateway {

namespace {

using ojson = nlohmann::ordered_json;

// A lookup answer is fresher than a record; older than this, the record's figure is used instead.
constexpr auto lookup_load_fresh_for = std::chrono::seconds(2);

void pause(std::chrono::milliseconds d, const fleet::stop_fn & should_stop) {
    const auto until = steady::now() + d;
    while (steady::now() < until && !should_stop()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

}  // namespace

bool host_view::serves(const std::string & model) const {
    for (const auto & m : models)
        if (store::same_model_name(m.name, model)) return true;
    return false;
}

bool host_view::model_loaded(const std::string & model) const {
    for (const auto & m : models)
        if (store::same_model_name(m.name, model)) return m.loaded;
    return false;
}

host_table::host_table(fleet::etcd_client & etcd, fleet::fleet_keys keys, std::chrono::milliseconds eject_for)
    : etcd_(etcd), keys_(std::move(keys)), eject_for_(eject_for) {}

status host_table::refresh() {
    auto hosts = etcd_.get_prefix(keys_.hosts());
    if (!hosts.ok()) return hosts.err();
    auto health = etcd_.get_prefix(keys_.health());
    if (!health.ok()) return health.err();
    std::lock_guard lock(mu_);
    changed();
    // Keep what only the gateway knows (in flight, ejections, reported load); replace what etcd says.
    for (auto & [id, e] : hosts_) {
        lapse(e);  // a host still registered gets its record back below
        e.observations.clear();
    }
    revision_ = std::max(hosts->revision, health->revision);
    for (const auto & kv : hosts->kvs) apply(kv, false);
    for (const auto & kv : health->kvs) apply(kv, false);
    synced_ = true;
    return {};
}

void host_table::apply(const fleet::etcd_kv & kv, bool deleted) {
    changed();
    if (kv.key.starts_with(keys_.hosts())) {
        const std::string id = fleet::fleet_keys::tail(kv.key, keys_.hosts());
        if (id.empty()) return;
        auto & e = hosts_[id];
        if (deleted) {
            lapse(e);
            return;
        }
        auto r = fleet::parse_host_record(kv.value);
        const std::string why = fleet::registration_problem(id, kv.lease, r);
        if (!why.empty()) {
            if (e.ignored_revision != kv.mod_revision)
                rc::log::warn("gateway", "host_record_ignored", {{"key", kv.key}, {"why", why}, {"note", "not written by an agent: never routed to"}});
            e.ignored_revision = kv.mod_revision;
            e.record.reset();
            return;
        }
        e.record = r.value();
        e.record_own = e.inflight;
        e.lapsed.reset();
        return;
    }
    if (!kv.key.starts_with(keys_.health())) return;
    const auto [observer, target] = fleet::fleet_keys::pair_under(kv.key, keys_.health());
    if (target.empty()) return;
    auto it = hosts_.find(target);
    if (deleted) {
        if (it != hosts_.end()) it->second.observations.erase(observer);
        return;
    }
    auto j = nlohmann::json::parse(kv.value, nullptr, false);
    if (!j.is_object()) return;
    fleet::health_observation o{observer, j.value("state", ""), j.value("error", ""), j.value("checked_at", ""), j.value("ready", false)};
    hosts_[target].observations[observer] = o;
}

void host_table::run(const fleet::stop_fn & should_stop) {
    auto backoff = std::chrono::milliseconds(200);
    bool need_read = true;
    bool failing = false;
    while (!should_stop()) {
        if (need_read) {
            if (auto st = refresh(); !st) {
                if (!failing) rc::log::warn("gateway", "etcd_unreachable", {{"error", st.err().message}, {"note", "routing on the last picture of the fleet"}});
                failing = true;
                pause(backoff, should_stop);
                backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
                continue;
            }
            need_read = false;
        }
        int64_t from;
        {
            std::lock_guard lock(mu_);
            from = revision_ + 1;
        }
        auto end = etcd_.watch(
            keys_.prefix, from,
            [this](const std::vector<fleet::etcd_event> & events, int64_t) {
                // Resume after the last event seen (a message's header revision may run ahead of it).
                std::lock_guard lock(mu_);
                for (const auto & ev : events) {
                    apply(ev.kv, ev.is_delete);
                    revision_ = std::max(revision_, ev.kv.mod_revision);
                }
            },
            should_stop);
        if (end.ok()) {
            if (failing) rc::log::info("gateway", "etcd_reachable", {});
            failing = false;
            backoff = std::chrono::milliseconds(200);
            if (end->compacted) need_read = true;
            else {
                std::lock_guard lock(mu_);
                revision_ = std::max(revision_, end->next_revision - 1);
            }
            continue;
        }
        if (!failing) rc::log::warn("gateway", "etcd_watch_broken", {{"error", end.err().message}});
        failing = true;
        pause(backoff, should_stop);
        backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
    }
}

void host_table::lapse(entry & e) {
    if (!e.record) return;
    e.lapsed = std::move(e.record);
    e.record.reset();
    e.lapsed_seen = entry::lapsed_probe::none;
    e.lapsed_wait = 0;
    e.lapsed_gap = 1;
}

void host_table::probe_lapsed(std::chrono::milliseconds timeout) {
    std::vector<std::pair<std::string, std::string>> targets;  // id, url
    {
        std::lock_guard lock(mu_);
        for (auto & [id, e] : hosts_) {
            if (e.record || !e.lapsed) continue;
            if (e.lapsed_wait > 0) {
                --e.lapsed_wait;  // silent last time: backing off
                continue;
            }
            targets.emplace_back(id, e.lapsed->openai_url);
        }
    }
    for (const auto & [id, url] : targets) {
        const bool answers = !url.empty() && fleet::probe_ready(url, timeout).ready;
        std::lock_guard lock(mu_);
        auto it = hosts_.find(id);
        if (it == hosts_.end() || it->second.record || !it->second.lapsed || it->second.lapsed->openai_url != url) continue;
        auto & e = it->second;
        const auto seen = answers ? entry::lapsed_probe::answers : entry::lapsed_probe::silent;
        if (answers) {
            e.lapsed_gap = 1;  // serving (again): probed every round, so that a stop is seen at once
        } else {
            // Down, yet probed on (its server may come back before its agent reaches etcd).
            e.lapsed_wait = e.lapsed_gap - 1;
            e.lapsed_gap = std::min(e.lapsed_gap * 2, lapsed_backoff_max_rounds);
        }
        if (std::exchange(e.lapsed_seen, seen) != seen) changed();
    }
}

void host_table::run_probes(const fleet::stop_fn & should_stop, std::chrono::milliseconds interval, std::chrono::milliseconds timeout) {
    while (!should_stop()) {
        probe_lapsed(timeout);
        pause(interval, should_stop);
    }
}

bool host_table::synced() const {
    std::lock_guard lock(mu_);
    return synced_;
}

host_view host_table::view(const std::string & id, const entry & e, steady::time_point now) const {
    host_view v;
    v.id = id;
    std::vector<fleet::health_observation> obs;
    for (const auto & [_, o] : e.observations) obs.push_back(o);
    const fleet::host_record * rec = e.record ? &*e.record : nullptr;
    if (!rec && e.lapsed && e.lapsed_seen == entry::lapsed_probe::silent) {
        v.state = "down";
        v.why = "its lease expired or was revoked and its server does not answer (probed again with backoff)";
    } else if (!rec && e.lapsed) {
        rec = &*e.lapsed;
        v.state = "unreachable";
        v.why = e.lapsed_seen == entry::lapsed_probe::answers ? "its lease lapsed (its agent cannot reach etcd) but its server answers"
                                 : "its lease lapsed; checking whether its server still answers";
    } else {
        v.state = fleet::derive_host_state(e.record, obs, v.why);
    }
    if (rec) {
        v.url = rec->openai_url;
        for (const auto & m : rec->models)
            if (m.status == "ready") v.models.push_back(m);
        if (rec->load.known) v.reported_busy = static_cast<int>(rec->load.running + rec->load.queued);
    }
    if (e.lookup_busy >= 0 && now - e.lookup_at < lookup_load_fresh_for) v.reported_busy = e.lookup_busy;
    const auto load = load_of(e, now);
    v.inflight = load.inflight;
    v.others_busy = load.others_busy;
    v.slots = load.slots;
    const bool same_server = rec && rec->server.pid == e.ejected_pid && rec->openai_url == e.ejected_url;
    v.ejected = now < e.ejected_until && same_server;
    return v;
}

host_load host_table::load_of(const entry & e, steady::time_point now) {
    host_load l;
    l.inflight = e.inflight;
    l.slots = e.slots;
    const auto & rec = e.record ? e.record : e.lapsed;
    if (rec && rec->load.known) l.others_busy = std::max(0, static_cast<int>(rec->load.running + rec->load.queued) - e.record_own);
    if (e.lookup_busy >= 0 && now - e.lookup_at < lookup_load_fresh_for) l.others_busy = std::max(0, e.lookup_busy - e.lookup_own);
    return l;
}

std::shared_ptr<const host_table::candidate_set> host_table::routable(const std::string & model) const {
    std::lock_guard lock(mu_);
    const auto now = steady::now();
    if (auto it = routable_.find(model); it != routable_.end() && now < it->second.until) return it->second.set;
    auto set = std::make_shared<candidate_set>();
    auto until = steady::time_point::max();
    for (const auto & [id, e] : hosts_) {
        auto v = view(id, e, now);
        if (v.ejected) until = std::min(until, e.ejected_until);
        if (!v.routable() || !(model.empty() || v.serves(model))) continue;
        set->loaded.push_back(model.empty() || v.model_loaded(model));
        set->entries.push_back(&e);
        set->hosts.push_back(std::move(v));
    }
    if (set->hosts.empty()) return set;  // a name no host serves is not kept: clients' made-up names evict nothing
    if (routable_.size() >= 64) routable_.clear();
    routable_[model] = {set, until};
    return set;
}

void host_table::loads(const candidate_set & set, std::vector<host_load> & out) const {
    out.resize(set.entries.size());
    std::lock_guard lock(mu_);
    const auto now = steady::now();
    for (size_t i = 0; i < set.entries.size(); ++i) out[i] = load_of(*set.entries[i], now);
}

std::vector<host_view> host_table::hosts() const {
    std::lock_guard lock(mu_);
    const auto now = steady::now();
    std::vector<host_view> out;
    for (const auto & [id, e] : hosts_) out.push_back(view(id, e, now));
    return out;
}

std::optional<host_view> host_table::host(const std::string & id) const {
    std::lock_guard lock(mu_);
    auto it = hosts_.find(id);
    if (it == hosts_.end()) return std::nullopt;
    return view(id, it->second, steady::now());
}

std::string host_table::state_of(const std::string & id) const {
    auto h = host(id);
    return h ? h->state : "down";
}

std::shared_ptr<void> host_table::begin(const std::string & id) {
    {
        std::lock_guard lock(mu_);
        ++hosts_[id].inflight;
    }
    return std::shared_ptr<void>(nullptr, [this, id](void *) {
        std::lock_guard lock(mu_);
        --hosts_[id].inflight;
    });
}

void host_table::eject(const std::string & id) {
    std::lock_guard lock(mu_);
    changed();
    auto & e = hosts_[id];
    e.ejected_until = steady::now() + eject_for_;
    const auto & rec = e.record ? e.record : e.lapsed;
    e.ejected_pid = rec ? rec->server.pid : 0;
    e.ejected_url = rec ? rec->openai_url : "";
}

void host_table::note_load(const std::string & id, int busy, int slots) {
    std::lock_guard lock(mu_);
    auto & e = hosts_[id];
    e.lookup_busy = busy;
    e.lookup_own = e.inflight;
    if (slots > 0) e.slots = slots;
    e.lookup_at = steady::now();
}

ojson host_table::to_json() const {
    ojson out = ojson::array();
    for (const auto & h : hosts()) {
        ojson models = ojson::array();
        for (const auto & m : h.models) models.push_back({{"name", m.name}, {"loaded", m.loaded}});
        out.push_back({{"id", h.id}, {"state", h.state}, {"why", h.why}, {"url", h.url}, {"routable", h.routable()}, {"ejected", h.ejected},
                       {"inflight", h.inflight}, {"busy", h.busy()}, {"slots", h.slots}, {"models", models}});
    }
    return out;
}

}  // namespace rc::gateway
