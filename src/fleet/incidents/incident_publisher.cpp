#include "fleet/incidents/incident_publisher.h"

#include <fstream>

#include "fleet/incidents/outbox.h"
#include "store/timestamps.h"
#include "util/log.h"
#include "util/secret_scrub.h"

namespace rc::fleet {

incident_publisher::incident_publisher(etcd_client & etcd, fleet_keys keys, std::string host, std::filesystem::path models_dir,
                                       std::filesystem::path data_dir, nlohmann::ordered_json versions, nlohmann::ordered_json hardware)
    : etcd_(etcd), keys_(std::move(keys)), host_(std::move(host)), log_(store::incident_log::in_store(models_dir)),
      published_file_(data_dir / "published-incidents"), versions_(std::move(versions)), hardware_(std::move(hardware)),
      horizon_(std::chrono::system_clock::now() - std::chrono::hours(24)) {
    std::ifstream in(published_file_);
    for (std::string id; std::getline(in, id);)
        if (!id.empty()) published_.insert(id);
}

namespace {

void scrub_json(nlohmann::ordered_json & j) {
    if (j.is_string()) j = scrub_secrets(j.get<std::string>());
    else if (j.is_array() && !j.empty() && j[0].is_string()) {  // lines of output: a PEM block spans several
        std::vector<std::string> lines;
        for (const auto & l : j) lines.push_back(l.is_string() ? l.get<std::string>() : l.dump());
        j = scrub_lines(lines);
    } else if (j.is_structured()) {
        for (auto & v : j) scrub_json(v);
    }
}

}  // namespace

result<store::incident> incident_publisher::record(const std::string & kind, const std::string & model, const std::string & digest,
                                                   const std::string & raw_reason, nlohmann::ordered_json evidence) {
    // Evidence is text from servers and clients: secrets go before it is kept, published or filed.
    scrub_json(evidence);
    const std::string reason = scrub_secrets(raw_reason);
    const std::string fp = incident_fingerprint(kind, reason, digest, versions_.value("rustycage", ""));
    nlohmann::ordered_json details = {
        {"fleet", {{"host", host_}, {"fingerprint", fp}, {"digest", digest}, {"versions", versions_}, {"hardware", hardware_}, {"evidence", evidence}}}};
    auto inc = log_.record(kind, model, reason, details);
    if (inc) rc::log::warn("fleet", "incident", {{"id", inc->id}, {"kind", kind}, {"fingerprint", fp}, {"reason", reason}});
    else rc::log::error("fleet", "incident_not_recorded", {{"kind", kind}, {"error", inc.err().message}});
    return inc;
}

result<int> incident_publisher::publish_once() {
    auto local = log_.list(1000);
    int fresh = 0;
    for (auto it = local.rbegin(); it != local.rend(); ++it) {  // oldest first
        {
            std::lock_guard<std::mutex> lock(mu_);
            if (published_.count(it->id)) continue;
        }
        if (it->time < horizon_) continue;  // history from before this agent's day: not news to the fleet
        fleet_incident inc = from_local(*it, host_, versions_, hardware_);
        inc.reason = scrub_secrets(inc.reason);  // the server's and the CLI's records too, not only the agent's
        scrub_json(inc.evidence);
        outbox_entry entry;
        entry.incident_id = inc.id;
        entry.host = inc.host;
        entry.fingerprint = inc.fingerprint;
        entry.created_at = store::format_rfc3339(std::chrono::system_clock::now());
        auto r = etcd_.txn({etcd_compare::absent(keys_.incident(inc.host, inc.id))},
                           {etcd_op::put(keys_.incident(inc.host, inc.id), to_json(inc).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace)),
                            etcd_op::put(keys_.outbox_entry(inc.host, inc.id), to_json(entry).dump())});
        if (!r.ok()) return r.err();
        if (r->succeeded) {
            ++fresh;
            rc::log::info("fleet", "incident_published", {{"id", inc.id}, {"kind", inc.kind}, {"fingerprint", inc.fingerprint}});
        }
        std::lock_guard<std::mutex> lock(mu_);
        published_.insert(inc.id);
        std::ofstream out(published_file_, std::ios::app);
        out << inc.id << "\n";
    }
    return fresh;
}

}  // namespace rc::fleet
