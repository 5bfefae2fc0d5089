#include "fleet/view/console_feed.h"

#include "fleet/view/fleet_view.h"
#include "fleet/rollout/rollout_record.h"

namespace rc::fleet {

result<nlohmann::ordered_json> read_console_document(etcd_client & etcd, const fleet_keys & keys) {
    auto fleet = read_fleet(etcd, keys);
    if (!fleet.ok()) return fleet.err();
    nlohmann::ordered_json doc = {{"schema", 1}};
    doc["triager"] = fleet.value().triager.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(fleet.value().triager);
    doc["alarms"] = fleet.value().alarms;
    doc["hosts"] = nlohmann::ordered_json::array();
    for (const auto & h : fleet.value().hosts) doc["hosts"].push_back(to_json(h));
    doc["incidents"] = nlohmann::ordered_json::array();
    for (const auto & v : fleet.value().incidents) doc["incidents"].push_back(to_json(v));
    auto rollouts = read_rollouts(etcd, keys);
    if (!rollouts.ok()) return rollouts.err();
    doc["rollouts"] = nlohmann::ordered_json::array();
    for (const auto & r : rollouts.value()) doc["rollouts"].push_back(to_json(r));
    return doc;
}

console_feed::console_feed(std::unique_ptr<etcd_client> etcd, fleet_keys keys, std::chrono::milliseconds max_age)
    : etcd_(std::move(etcd)), keys_(std::move(keys)), max_age_(max_age) {}

result<nlohmann::ordered_json> console_feed::document() {
    std::lock_guard lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    if (cached_ && now - read_at_ < max_age_) return *cached_;
    auto doc = read_console_document(*etcd_, keys_);
    if (!doc.ok()) {
        cached_.reset();  // an unreachable fleet is said at once, not hidden behind an old picture
        return doc.err();
    }
    cached_ = doc.value();
    read_at_ = now;
    return doc;
}

}  // namespace rc::fleet
