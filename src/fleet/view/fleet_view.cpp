#include "fleet/view/fleet_view.h"

#include <algorithm>
#include <map>

#include "store/timestamps.h"

namespace rc::fleet {

namespace {

using ojson = nlohmann::ordered_json;

std::string str(const ojson & j, const char * k) { return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string(); }

}  // namespace

std::string derive_host_state(const std::optional<host_record> & record, const std::vector<health_observation> & observations, std::string & why) {
    why.clear();
    if (!record) {
        for (const auto & o : observations)
            if (o.state == "unreachable") {
                why = o.observer + " reaches its server, but its lease lapsed: its agent cannot reach etcd";
                return "unreachable";
            }
        why = "not registered: its lease expired or was revoked";
        return "down";
    }
    if (!record->server.ready) {
        why = "its agent reports the server " + record->server.state + (record->server.last_exit.empty() ? "" : " (last exit: " + record->server.last_exit + ")");
        return "degraded";
    }
    for (const auto & o : observations) {
        if (o.observer == record->id || o.state != "degraded") continue;
        why = o.observer + " cannot use it: " + o.error;
        return "degraded";
    }
    return "up";
}

result<fleet_snapshot> read_fleet(etcd_client & etcd, const fleet_keys & keys) {
    auto hosts = etcd.get_prefix(keys.hosts());
    if (!hosts.ok()) return hosts.err();
    auto roster = etcd.get_prefix(keys.roster());
    if (!roster.ok()) return roster.err();
    auto health = etcd.get_prefix(keys.health());
    if (!health.ok()) return health.err();
    auto incidents = read_incidents(etcd, keys);
    if (!incidents.ok()) return incidents.err();

    std::map<std::string, host_view> by_id;
    for (const auto & kv : roster->kvs) {
        const std::string id = fleet_keys::tail(kv.key, keys.roster());
        if (id.empty()) continue;
        auto j = ojson::parse(kv.value, nullptr, false);
        auto & h = by_id[id];
        h.id = id;
        if (j.is_object()) {
            h.first_seen = str(j, "first_seen");
            h.left_at = str(j, "left_at");
        }
    }
    for (const auto & kv : hosts->kvs) {
        const std::string id = fleet_keys::tail(kv.key, keys.hosts());
        if (id.empty()) continue;
        auto & h = by_id[id];
        h.id = id;
        h.lease = kv.lease;
        auto r = parse_host_record(kv.value);
        // A record not on a lease (or naming another host) was not written by an agent: the gateway
        // and the agents ignore it, and so does the picture (it showed such a record `up`).
        if (const std::string problem = registration_problem(id, kv.lease, r); !problem.empty()) h.ignored = problem;
        else h.record = r.value();
    }
    for (const auto & kv : health->kvs) {
        const auto [observer, target] = fleet_keys::pair_under(kv.key, keys.health());
        if (target.empty()) continue;
        auto j = ojson::parse(kv.value, nullptr, false);
        if (!j.is_object()) continue;
        health_observation o{observer, str(j, "state"), str(j, "error"), str(j, "checked_at"), j.value("ready", false)};
        auto it = by_id.find(target);
        if (it != by_id.end()) it->second.observations.push_back(o);
    }
    for (const auto & v : incidents.value())
        if (v.incident.acked_at.empty())
            if (auto it = by_id.find(v.incident.host); it != by_id.end()) ++it->second.open_incidents;

    fleet_snapshot out;
    for (auto & [id, h] : by_id) {
        h.state = derive_host_state(h.record, h.observations, h.why);
        if (h.state == "down" && !h.left_at.empty()) h.why = "stopped by its agent at " + h.left_at;
        if (!h.ignored.empty()) h.why = "its record is ignored: " + h.ignored + "; never routed to";
        if (h.lease != 0)
            if (auto t = etcd.time_to_live(h.lease); t.ok()) {
                h.ttl_left = t->ttl;
                h.ttl_granted = t->granted_ttl;
            }
        out.hosts.push_back(std::move(h));
    }
    if (auto l = etcd.leader(keys.triager_election()); l.ok() && l->has_value()) out.triager = (*l)->value;
    if (auto a = etcd.alarms(); a.ok()) out.alarms = std::move(a.value());
    out.incidents = std::move(incidents.value());
    return out;
}

result<std::vector<incident_view>> read_incidents(etcd_client & etcd, const fleet_keys & keys) {
    auto incs = etcd.get_prefix(keys.incidents());
    if (!incs.ok()) return incs.err();
    auto box = etcd.get_prefix(keys.outbox());
    if (!box.ok()) return box.err();
    std::map<std::string, outbox_entry> entries;
    for (const auto & kv : box->kvs)
        if (auto e = parse_outbox_entry(kv.value); e.ok()) entries[e->host + "/" + e->incident_id] = e.value();
    std::vector<incident_view> out;
    for (const auto & kv : incs->kvs) {
        auto i = parse_fleet_incident(kv.value);
        if (!i.ok()) continue;
        incident_view v{i.value(), std::nullopt};
        if (auto it = entries.find(v.incident.host + "/" + v.incident.id); it != entries.end()) v.outbox = it->second;
        out.push_back(std::move(v));
    }
    std::sort(out.begin(), out.end(), [](const incident_view & a, const incident_view & b) {
        return a.incident.time != b.incident.time ? a.incident.time > b.incident.time : a.incident.id > b.incident.id;
    });
    return out;
}

result<incident_view> find_incident(etcd_client & etcd, const fleet_keys & keys, const std::string & id) {
    if (id.empty() || id.find('/') != std::string::npos) return make_error(errc::invalid_argument, "'" + id + "' is not an incident id");
    auto all = read_incidents(etcd, keys);
    if (!all.ok()) return all.err();
    std::vector<const incident_view *> matches;
    for (const auto & v : all.value()) {
        if (v.incident.id == id) return v;
        if (v.incident.id.starts_with(id)) matches.push_back(&v);
    }
    if (matches.size() == 1) return *matches[0];
    if (matches.empty()) return make_error(errc::not_found, "no incident '" + id + "' (see `rustycage incidents list`)");
    return make_error(errc::invalid_argument, "'" + id + "' matches " + std::to_string(matches.size()) + " incidents: give more of the id");
}

result<fleet_incident> ack_incident(etcd_client & etcd, const fleet_keys & keys, const std::string & id, const std::string & by) {
    for (int attempt = 0; attempt < 5; ++attempt) {
        auto v = find_incident(etcd, keys, id);
        if (!v.ok()) return v.err();
        const std::string key = keys.incident(v->incident.host, v->incident.id);
        auto kv = etcd.get(key);
        if (!kv.ok()) return kv.err();
        if (kv->kvs.empty()) return make_error(errc::not_found, "incident '" + id + "' is gone");
        auto inc = parse_fleet_incident(kv->kvs[0].value);
        if (!inc.ok()) return inc.err();
        if (!inc->acked_at.empty()) return inc.value();
        inc->acked_at = store::format_rfc3339(std::chrono::system_clock::now());
        inc->acked_by = by;
        auto r = etcd.txn({etcd_compare::mod_revision_is(key, kv->kvs[0].mod_revision)}, {etcd_op::put(key, to_json(inc.value()).dump())});
        if (!r.ok()) return r.err();
        if (r->succeeded) return inc.value();
    }
    return make_error(errc::unavailable, "incident '" + id + "' kept changing; try again");
}

ojson to_json(const host_view & h) {
    ojson obs = ojson::array();
    for (const auto & o : h.observations)
        obs.push_back({{"observer", o.observer}, {"state", o.state}, {"ready", o.ready}, {"error", o.error}, {"checked_at", o.checked_at}});
    ojson j = {{"id", h.id},
               {"state", h.state},
               {"why", h.why},
               {"heartbeat_age_s", h.ttl_left >= 0 ? ojson(h.ttl_granted - h.ttl_left) : ojson(nullptr)},
               {"lease_ttl_left_s", h.ttl_left >= 0 ? ojson(h.ttl_left) : ojson(nullptr)},
               {"open_incidents", h.open_incidents},
               {"first_seen", h.first_seen},
               {"left_at", h.left_at},
               {"observations", obs}};
    j["record"] = h.record ? to_json(*h.record) : ojson(nullptr);
    return j;
}

ojson to_json(const incident_view & v) {
    ojson j = to_json(v.incident);
    j["status"] = filing_status(v);
    j["outbox"] = v.outbox ? to_json(*v.outbox) : ojson(nullptr);
    return j;
}

std::string filing_status(const incident_view & v) {
    std::string s = v.incident.acked_at.empty() ? "open" : "acked";
    if (!v.outbox) return s;
    if (v.outbox->state == "done") return s + ", #" + std::to_string(v.outbox->issue_number);
    return s + ", " + v.outbox->state;
}

}  // namespace rc::fleet
