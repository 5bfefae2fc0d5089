#include "fleet/rollout/rollout_plan.h"

#include <algorithm>

#include "store/timestamps.h"

namespace rc::fleet {

namespace {

std::string model_sem(const std::string & model) { return "model:" + model; }

std::string ids_text(const std::vector<std::string> & ids) {
    std::string out;
    for (const auto & id : ids) out += (out.empty() ? "" : ", ") + id;
    return out;
}

}  // namespace

rollout_plan plan_rollout(const std::vector<rollout_planned_host> & hosts, int cohort_size, int max_unavailable) {
    rollout_plan plan;
    cohort_size = std::max(cohort_size, 1);
    max_unavailable = std::max(max_unavailable, 1);
    std::map<std::string, int> serving;
    for (const auto & h : hosts)
        for (const auto & m : h.models) ++serving[m];
    plan.slots["all"] = max_unavailable;
    for (const auto & [m, n] : serving) {
        plan.slots[model_sem(m)] = std::max(1, std::min(max_unavailable, n - 1));
        if (n == 1) plan.notes.push_back("`" + m + "` is served by one host only: it is unavailable while that host cuts over");
    }
    std::vector<const rollout_planned_host *> order;
    for (const auto & h : hosts) order.push_back(&h);
    // Canary first: a host none of whose models depends on it alone; fewest models, then by id.
    auto sole = [&](const rollout_planned_host * h) {
        return std::any_of(h->models.begin(), h->models.end(), [&](const std::string & m) { return serving[m] <= 1; });
    };
    std::sort(order.begin(), order.end(), [&](const auto * a, const auto * b) {
        if (sole(a) != sole(b)) return !sole(a);
        if (a->models.size() != b->models.size()) return a->models.size() < b->models.size();
        return a->id < b->id;
    });
    if (order.empty()) return plan;
    plan.cohorts.push_back({order.front()->id});
    // Then cohorts of up to cohort_size, each holding no more of a model's hosts than its capacity.
    std::vector<const rollout_planned_host *> left(order.begin() + 1, order.end());
    while (!left.empty()) {
        std::vector<std::string> cohort;
        std::map<std::string, int> used;
        for (auto it = left.begin(); it != left.end() && int(cohort.size()) < cohort_size;) {
            const auto & h = **it;
            bool fits = true;
            for (const auto & m : h.models) fits = fits && used[m] < plan.slots[model_sem(m)];
            if (!fits) {
                ++it;
                continue;
            }
            for (const auto & m : h.models) ++used[m];
            cohort.push_back(h.id);
            it = left.erase(it);
        }
        plan.cohorts.push_back(std::move(cohort));
    }
    return plan;
}

std::vector<std::pair<std::string, int>> slots_for(const rollout_record & r, const std::string & host) {
    std::vector<std::pair<std::string, int>> out;
    auto cap = [&](const std::string & sem) {
        auto it = r.slots.find(sem);
        return it == r.slots.end() ? 1 : it->second;
    };
    out.emplace_back("all", cap("all"));
    if (const auto * h = r.host(host))
        for (const auto & m : h->models) out.emplace_back(model_sem(m), cap(model_sem(m)));
    return out;
}

rollout_decision decide_rollout(const rollout_record & r, const std::map<std::string, host_progress> & progress,
                                const std::map<std::string, live_host> & live, sys_time now) {
    rollout_decision d;
    d.next = r;
    const std::string now_text = store::format_rfc3339(now);
    auto halt = [&](const std::string & why) {
        d.action = rollout_action::halt;
        d.next.state = "failed";
        d.next.message = why;
        d.next.finished_at = now_text;
        return d;
    };
    if (r.state == "pending") {
        std::vector<rollout_planned_host> hosts;
        for (const auto & [id, h] : live)
            if (h.registered) hosts.push_back({id, h.models, h.version});
        if (hosts.empty()) return halt("no host is registered: nothing to upgrade");
        auto plan = plan_rollout(hosts, r.spec.cohort_size, r.spec.max_unavailable);
        for (const auto & [id, h] : live)
            if (!h.registered) plan.notes.push_back("`" + id + "` is down and was left out");
        d.action = rollout_action::start;
        d.next.state = "running";
        d.next.hosts = hosts;
        d.next.cohorts = plan.cohorts;
        d.next.slots = plan.slots;
        d.next.notes = plan.notes;
        d.next.cohort = 0;
        d.next.started_at = d.next.cohort_started_at = now_text;
        d.next.message = "canary: " + plan.cohorts[0][0];
        return d;
    }
    if (r.state != "running") return d;
    if (r.cohort < 0 || r.cohort >= int(r.cohorts.size())) {
        d.action = rollout_action::finish;
        d.next.state = "done";
        d.next.finished_at = now_text;
        return d;
    }
    bool all_done = true;
    for (const auto & id : r.cohorts[size_t(r.cohort)]) {
        auto it = progress.find(id);
        const host_progress p = it == progress.end() ? host_progress::at(id) : it->second;
        if (p.step == "failed" || p.step == "rolled_back")
            return halt("host " + id + " " + (p.step == "failed" ? "failed" : "was rolled back") + " (" + p.message + "); hosts not yet reached are untouched");
        if (p.step == "done") continue;
        all_done = false;
        auto lh = live.find(id);
        if (lh != live.end() && !lh->second.registered && lh->second.unregistered_for > r.spec.host_timeout)
            return halt("host " + id + " has been unregistered for " + std::to_string(lh->second.unregistered_for.count() / 1000) +
                        " s (during step " + p.step + ")");
    }
    if (!all_done) return d;
    if (r.cohort + 1 >= int(r.cohorts.size())) {
        int hosts = 0;
        for (const auto & c : r.cohorts) hosts += int(c.size());
        d.action = rollout_action::finish;
        d.next.state = "done";
        d.next.finished_at = now_text;
        d.next.message = "all " + std::to_string(hosts) + " host(s) run " + r.spec.version;
        return d;
    }
    d.action = rollout_action::advance;
    d.next.cohort = r.cohort + 1;
    d.next.cohort_started_at = now_text;
    d.next.message = "cohort " + std::to_string(d.next.cohort) + " of " + std::to_string(r.cohorts.size() - 1) + ": " +
                     ids_text(r.cohorts[size_t(d.next.cohort)]);
    return d;
}

}  // namespace rc::fleet
