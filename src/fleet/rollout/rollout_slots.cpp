#include "fleet/rollout/rollout_slots.h"

#include "fleet/rollout/rollout_record.h"

namespace rc::fleet {

rollout_slots::rollout_slots(etcd_client & etcd, fleet_keys keys, std::string rollout_id, std::string host)
    : etcd_(etcd), keys_(std::move(keys)), rollout_(std::move(rollout_id)), host_(std::move(host)) {}

result<bool> rollout_slots::try_acquire(const std::vector<std::pair<std::string, int>> & sems, int64_t lease, std::string & why,
                                        const std::function<bool(const slot_holders &, std::string &)> & admit) {
    if (lease == 0) {
        why = "this host has no lease (etcd unreachable)";
        return false;
    }
    // One read transaction: every guard key and every holder list at one revision.
    std::vector<etcd_op> reads;
    for (const auto & [sem, cap] : sems) {
        const std::string name = slot_key_name(sem);
        reads.push_back(etcd_op::get(keys_.rollout_sem(rollout_, name)));
        etcd_op holders = etcd_op::get(keys_.rollout_slots(rollout_, name));
        holders.prefix = true;
        reads.push_back(holders);
    }
    auto snap = etcd_.txn({}, reads);
    if (!snap.ok()) return snap.err();
    if (snap->ranges.size() != reads.size()) return make_error(errc::unavailable, "etcd answered a short read transaction");
    slot_holders seen;
    seen.revision = snap->revision;
    std::vector<etcd_compare> cmp;
    std::vector<etcd_op> writes;
    for (size_t i = 0; i < sems.size(); ++i) {
        const auto & [sem, cap] = sems[i];
        const std::string name = slot_key_name(sem);
        const auto & guard = snap->ranges[2 * i];
        const auto & held = snap->ranges[2 * i + 1];
        std::vector<std::string> others;
        for (const auto & kv : held.kvs) {
            const std::string who = fleet_keys::tail(kv.key, keys_.rollout_slots(rollout_, name));
            if (!who.empty() && who != host_) others.push_back(who);
        }
        if (int(others.size()) >= cap) {
            why = "slot `" + sem + "` is full (" + std::to_string(cap) + "): held by ";
            for (size_t k = 0; k < others.size(); ++k) why += (k ? ", " : "") + others[k];
            return false;
        }
        seen.holders.push_back(std::move(others));
        const std::string gk = keys_.rollout_sem(rollout_, name);
        cmp.push_back(guard.kvs.empty() ? etcd_compare::absent(gk) : etcd_compare::mod_revision_is(gk, guard.kvs[0].mod_revision));
        writes.push_back(etcd_op::put(gk, host_));
        writes.push_back(etcd_op::put(keys_.rollout_slots(rollout_, name) + host_, host_, lease));
    }
    if (admit && !admit(seen, why)) return false;
    auto t = etcd_.txn(cmp, writes);
    if (!t.ok()) return t.err();
    if (!t->succeeded) why = "another host took a slot first; retrying";
    return t->succeeded;
}

status rollout_slots::release(const std::vector<std::pair<std::string, int>> & sems) {
    std::vector<etcd_op> dels;
    for (const auto & [sem, cap] : sems) dels.push_back(etcd_op::del(keys_.rollout_slots(rollout_, slot_key_name(sem)) + host_));
    auto t = etcd_.txn({}, dels);
    if (!t.ok()) return t.err();
    return {};
}

result<std::vector<std::string>> rollout_slots::holders(const std::string & sem) {
    const std::string dir = keys_.rollout_slots(rollout_, slot_key_name(sem));
    auto r = etcd_.get_prefix(dir);
    if (!r.ok()) return r.err();
    std::vector<std::string> out;
    for (const auto & kv : r->kvs) out.push_back(fleet_keys::tail(kv.key, dir));
    return out;
}

}  // namespace rc::fleet
