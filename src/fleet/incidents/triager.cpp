#include "fleet/incidents/triager.h"

#include <thread>

#include "util/log.h"
#include "store/model_name.h"

namespace rc::fleet {

triager::triager(etcd_client & etcd, github_client & github, fleet_keys keys, triager_options opts, std::function<int64_t()> lease,
                 std::function<std::vector<host_record>()> healthy_hosts)
    : etcd_(etcd), github_(github), keys_(std::move(keys)), opts_(std::move(opts)), lease_(std::move(lease)), hosts_(std::move(healthy_hosts)) {}

triage_result triager::triage(const fleet_incident & inc) {
    if (opts_.triage_model.empty()) return rule_triage(inc, "no triage model is configured (--triage-model).");
    std::string why = "no healthy host serves the triage model `" + opts_.triage_model + "`.";
    for (const auto & h : hosts_()) {
        bool serves = false;
        for (const auto & m : h.models) serves = serves || (m.status == "ready" && store::same_model_name(m.name, opts_.triage_model));
        if (!serves || h.openai_url.empty()) continue;
        auto t = model_triage(inc, h.openai_url, opts_.triage_model, h.id, opts_.triage_timeout, opts_.api_key);
        if (t.ok()) return t.value();
        why = "the triage model `" + opts_.triage_model + "` on `" + h.id + "` failed: " + t.err().message + ".";
        rc::log::warn("fleet", "model_triage_failed", {{"host", h.id}, {"error", t.err().message}});
    }
    return rule_triage(inc, why);
}

void triager::run(const stop_fn & should_stop) {
    outbox_worker worker(etcd_, github_, keys_, opts_.host, opts_.outbox, [this](const fleet_incident & i) { return triage(i); });
    while (!should_stop()) {
        const int64_t lease = lease_();
        if (lease == 0) {
            pause_unless_stopped(should_stop, opts_.poll_interval);
            continue;
        }
        auto lost = [&] { return should_stop() || lease_() != lease; };
        auto won = etcd_.campaign(keys_.triager_election(), lease, opts_.host, lost);
        if (!won.ok()) {
            if (!lost()) rc::log::debug("fleet", "campaign_failed", {{"error", won.err().message}});
            pause_unless_stopped(should_stop, opts_.poll_interval);
            continue;
        }
        leading_ = true;
        rc::log::info("fleet", "triager_elected", {{"host", opts_.host}, {"lease", lease}});
        while (!lost()) {
            auto now = etcd_.leader(keys_.triager_election());
            if (now.ok() && (!now->has_value() || (*now)->key != won->key)) break;  // someone else leads now
            if (now.ok()) {
                if (auto r = worker.run_once(lease); !r.ok()) rc::log::debug("fleet", "outbox_unreadable", {{"error", r.err().message}});
            }
            pause_unless_stopped(lost, opts_.poll_interval);
        }
        leading_ = false;
        rc::log::info("fleet", "triager_stepped_down", {{"host", opts_.host}});
        if (lease_() == lease) (void) etcd_.resign(won.value());
    }
}

}  // namespace rc::fleet
