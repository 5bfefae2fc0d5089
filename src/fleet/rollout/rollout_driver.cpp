#include "fleet/rollout/rollout_driver.h"

#include <thread>

#include "fleet/host/host_record.h"
#include "fleet/rollout/rollout_plan.h"
#include "fleet/rollout/rollout_record.h"
#include "util/log.h"

namespace rc::fleet {

rollout_driver::rollout_driver(etcd_client & etcd, fleet_keys keys, std::string host, std::function<int64_t()> lease, std::chrono::milliseconds poll)
    : etcd_(etcd), keys_(std::move(keys)), host_(std::move(host)), lease_(std::move(lease)), poll_(poll) {}

result<bool> rollout_driver::step_once() {
    auto active = etcd_.get(keys_.rollout_active());
    if (!active.ok()) return active.err();
    if (active->kvs.empty()) return false;
    auto view = read_rollout(etcd_, keys_, active->kvs[0].value);
    if (!view.ok()) return view.err();
    std::map<std::string, live_host> live;
    auto roster = etcd_.get_prefix(keys_.roster());
    if (!roster.ok()) return roster.err();
    for (const auto & kv : roster->kvs) {
        const std::string id = fleet_keys::tail(kv.key, keys_.roster());
        if (!id.empty()) live[id];
    }
    auto hosts = etcd_.get_prefix(keys_.hosts());
    if (!hosts.ok()) return hosts.err();
    for (const auto & kv : hosts->kvs) {
        auto rec = parse_host_record(kv.value);
        if (!registration_problem(fleet_keys::tail(kv.key, keys_.hosts()), kv.lease, rec).empty()) continue;  // no agent's: never planned
        live_host & h = live[rec->id];
        h.registered = true;
        h.ready = rec->server.ready;
        h.version = rec->version;
        for (const auto & m : rec->models)
            if (m.status == "ready") h.models.push_back(m.name);
    }
    for (const auto & h : view->rollout.hosts) live[h.id];  // a planned host missing from the roster counts as unregistered
    // Unregistered since when: this driver's monotonic clock, from its first read that saw it so.
    const auto now = std::chrono::steady_clock::now();
    for (auto & [id, h] : live) {
        if (h.registered) {
            unregistered_since_.erase(id);
            continue;
        }
        auto since = unregistered_since_.emplace(id, now).first->second;
        h.unregistered_for = std::chrono::duration_cast<std::chrono::milliseconds>(now - since);
    }
    rollout_decision d = decide_rollout(view->rollout, view->progress, live, std::chrono::system_clock::now());
    const bool stamp = view->rollout.driver != host_ && !view->rollout.finished();
    if (d.action == rollout_action::none && !stamp) return false;
    d.next.driver = host_;  // a new leader says so, even when there is nothing else to write
    auto w = write_rollout_state(etcd_, keys_, d.next);
    if (!w.ok()) return w.err();
    if (w.value() && d.action != rollout_action::none)
        rc::log::info("fleet", "rollout_" + std::string(d.next.state == "running" ? "progress" : d.next.state),
                      {{"rollout", d.next.id}, {"state", d.next.state}, {"cohort", d.next.cohort}, {"message", d.next.message}});
    return w.value();
}

void rollout_driver::run(const stop_fn & should_stop) {
    while (!should_stop()) {
        const int64_t lease = lease_();
        if (lease == 0) {
            pause_unless_stopped(should_stop, poll_);
            continue;
        }
        auto lost = [&] { return should_stop() || lease_() != lease; };
        auto won = etcd_.campaign(keys_.rollout_election(), lease, host_, lost);
        if (!won.ok()) {
            pause_unless_stopped(should_stop, poll_);
            continue;
        }
        leading_ = true;
        unregistered_since_.clear();  // a time from an earlier term would halt a host sooner than its bound
        rc::log::info("fleet", "rollout_driver_elected", {{"host", host_}});
        while (!lost()) {
            auto now = etcd_.leader(keys_.rollout_election());
            if (now.ok() && (!now->has_value() || (*now)->key != won->key)) break;
            if (now.ok())
                if (auto r = step_once(); !r.ok()) rc::log::debug("fleet", "rollout_unreadable", {{"error", r.err().message}});
            pause_unless_stopped(lost, poll_);
        }
        leading_ = false;
        if (lease_() == lease) (void) etcd_.resign(won.value());
    }
}

}  // namespace rc::fleet
