#include "fleet/incidents/outbox.h"

#include <algorithm>
#include <set>

#include "store/timestamps.h"
#include "util/log.h"

namespace rc::fleet {

namespace {

using ojson = nlohmann::ordered_json;

std::string now_text(sys_time t) { return store::format_rfc3339(t); }

sys_time parse_time(const std::string & s) {
    auto t = store::parse_rfc3339(s);
    return t ? *t : sys_time{};
}

std::string str(const ojson & j, const char * k) { return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string(); }

// ``` inside a log line would end our code fence early.
std::string fence_safe(std::string s) {
    for (size_t p; (p = s.find("```")) != std::string::npos;) s.replace(p, 3, "'''");
    return s;
}

std::string evidence_block(const fleet_incident & inc, size_t max_lines) {
    std::string out;
    auto t = inc.evidence.find("log_tail");
    if (t == inc.evidence.end() || !t->is_array() || t->empty()) return out;
    const size_t from = t->size() > max_lines ? t->size() - max_lines : 0;
    out += "<details><summary>Log tail (" + std::to_string(t->size() - from) + " lines)</summary>\n\n```text\n";
    for (size_t i = from; i < t->size(); ++i)
        if ((*t)[i].is_string()) out += fence_safe((*t)[i].get<std::string>().substr(0, 500)) + "\n";
    out += "```\n</details>\n";
    return out;
}

std::string md_cell(const std::string & s) {
    std::string out;
    for (char c : s) {
        if (c == '|') out += "\\|";
        else if (c == '\n') out += ' ';
        else out += c;
    }
    return out;
}

}  // namespace

ojson to_json(const outbox_entry & e) {
    ojson j = {{"schema", 1},           {"incident", e.incident_id}, {"host", e.host}, {"fingerprint", e.fingerprint}, {"state", e.state},
               {"created_at", e.created_at}, {"attempts", e.attempts}, {"next_attempt_at", e.next_attempt_at}, {"last_error", e.last_error}};
    if (e.triage) j["triage"] = to_json(*e.triage);
    if (!e.filing_by.empty()) j["filing"] = {{"by", e.filing_by}, {"lease", std::to_string(e.filing_lease)}, {"since", e.filing_since}};
    if (e.state == "done")
        j["result"] = {{"action", e.action}, {"issue", e.issue_number}, {"url", e.issue_url}, {"at", e.done_at}};
    return j;
}

result<outbox_entry> parse_outbox_entry(const std::string & text) {
    ojson j = ojson::parse(text, nullptr, false);
    if (!j.is_object() || !j.contains("incident") || !j["incident"].is_string()) return make_error(errc::invalid_argument, "not an outbox entry");
    outbox_entry e;
    e.incident_id = str(j, "incident");
    e.host = str(j, "host");
    e.fingerprint = str(j, "fingerprint");
    e.state = str(j, "state").empty() ? "pending" : str(j, "state");
    e.created_at = str(j, "created_at");
    e.attempts = j.value("attempts", 0);
    e.next_attempt_at = str(j, "next_attempt_at");
    e.last_error = str(j, "last_error");
    if (j.contains("triage") && j["triage"].is_object()) e.triage = parse_triage(j["triage"]);
    if (j.contains("filing") && j["filing"].is_object()) {
        const ojson & f = j["filing"];
        e.filing_by = str(f, "by");
        e.filing_since = str(f, "since");
        try {
            e.filing_lease = std::stoll(str(f, "lease"));
        } catch (...) {
            e.filing_lease = 0;
        }
    }
    if (j.contains("result") && j["result"].is_object()) {
        const ojson & r = j["result"];
        e.action = str(r, "action");
        e.issue_number = r.value("issue", int64_t(0));
        e.issue_url = str(r, "url");
        e.done_at = str(r, "at");
    }
    return e;
}

outbox_plan plan_outbox(const outbox_entry & e, sys_time now, int64_t my_lease, bool known_issue, std::chrono::milliseconds grace) {
    if (e.state == "done") return {outbox_step::done, "filed"};
    if (!e.next_attempt_at.empty() && now < parse_time(e.next_attempt_at)) return {outbox_step::wait, "backing off: " + e.last_error};
    if (e.state == "filing") {
        if (e.filing_lease != my_lease && now < parse_time(e.filing_since) + grace)
            return {outbox_step::wait, "claimed by " + e.filing_by + " (it may still be talking to GitHub)"};
        return {outbox_step::resume, "look up, then file what is missing"};
    }
    if (!e.triage && !known_issue) return {outbox_step::triage, "new fingerprint"};
    return {outbox_step::claim, known_issue ? "recurrence" : "triaged"};
}

std::string fingerprint_marker(const std::string & fp) { return "<!-- rustycage:fingerprint=" + fp + " -->"; }
std::string incident_marker(const std::string & id) { return "<!-- rustycage:incident=" + id + " -->"; }

std::string render_issue_body(const fleet_incident & inc, const triage_result & t, int64_t previous) {
    std::string b;
    b += "**Severity:** " + t.severity + " · **Component:** " + t.component + " · **Host:** `" + inc.host + "` · **Kind:** `" + inc.kind + "`\n\n";
    b += t.summary + "\n\n";
    b += "**Suggested action:** " + t.suggested_action + "\n\n";
    if (previous > 0) b += "This fault was tracked before in #" + std::to_string(previous) + " (closed).\n\n";
    b += "| | |\n|---|---|\n";
    b += "| Incident | `" + inc.id + "` |\n";
    b += "| Time | " + inc.time + " |\n";
    b += "| Host | `" + md_cell(inc.host) + "` |\n";
    b += "| Kind | `" + inc.kind + "` |\n";
    b += "| Error | " + md_cell(inc.reason.substr(0, 400)) + " |\n";
    if (!inc.model.empty()) b += "| Model | `" + md_cell(inc.model) + "` " + (inc.digest.empty() ? "" : "(`" + inc.digest + "`)") + " |\n";
    b += "| Versions | " + md_cell(inc.versions.dump()) + " |\n";
    if (!inc.hardware.empty()) b += "| Hardware | " + md_cell(inc.hardware.value("backend", "") + ", " + inc.hardware.value("cpu", "")) + " |\n";
    b += "| Fingerprint | `" + inc.fingerprint + "` |\n\n";
    if (t.source == "model") b += "Triaged by the model `" + t.model + "` served on `" + t.host + "`.\n\n";
    else b += "Triaged by rules, not by a model: " + t.note + "\n\n";
    b += evidence_block(inc, 40);
    b += "\n" + fingerprint_marker(inc.fingerprint) + "\n" + incident_marker(inc.id) + "\n";
    return b;
}

std::string render_comment(const fleet_incident & inc, bool reopened) {
    std::string b = reopened ? "Reopened: this fault happened again.\n\n" : "Seen again.\n\n";
    b += "| | |\n|---|---|\n";
    b += "| Incident | `" + inc.id + "` |\n| Time | " + inc.time + " |\n| Host | `" + md_cell(inc.host) + "` |\n| Error | " +
         md_cell(inc.reason.substr(0, 400)) + " |\n| Versions | " + md_cell(inc.versions.dump()) + " |\n\n";
    b += evidence_block(inc, 20);
    b += "\n" + incident_marker(inc.id) + "\n";
    return b;
}

outbox_worker::outbox_worker(etcd_client & etcd, github_client & github, fleet_keys keys, std::string host, outbox_options opts, triage_fn triage)
    : etcd_(etcd), github_(github), keys_(std::move(keys)), host_(std::move(host)), opts_(std::move(opts)), triage_(std::move(triage)) {}

bool outbox_worker::write(const outbox_entry & e, const std::vector<etcd_op> & also) {
    std::vector<etcd_op> ops = {etcd_op::put(keys_.outbox_entry(e.host, e.incident_id), to_json(e).dump())};
    ops.insert(ops.end(), also.begin(), also.end());
    auto r = etcd_.txn({etcd_compare::mod_revision_is(keys_.outbox_entry(e.host, e.incident_id), e.mod_revision)}, ops);
    if (!r.ok()) {
        rc::log::warn("fleet", "outbox_write_failed", {{"incident", e.incident_id}, {"error", r.err().message}});
        return false;
    }
    if (!r->succeeded) rc::log::info("fleet", "outbox_entry_moved_on", {{"incident", e.incident_id}});
    return r->succeeded;
}

result<int> outbox_worker::run_once(int64_t my_lease, sys_time now) {
    auto all = etcd_.get_prefix(keys_.outbox());
    if (!all.ok()) return all.err();
    std::vector<outbox_entry> entries;
    for (const auto & kv : all->kvs) {
        auto e = parse_outbox_entry(kv.value);
        if (!e.ok() || e->state == "done") continue;
        e->host = fleet_keys::pair_under(kv.key, keys_.outbox()).first;  // the key says whose it is
        e->mod_revision = kv.mod_revision;
        if (!e->host.empty()) entries.push_back(std::move(e.value()));
    }
    // Incident ids start with their time: oldest first, whichever host published them. A fingerprint's
    // later incidents wait until its first one is filed, then comment on that issue (no second triage).
    std::sort(entries.begin(), entries.end(), [](const outbox_entry & a, const outbox_entry & b) { return a.incident_id < b.incident_id; });
    int changed = 0;
    std::set<std::string> unfiled;
    for (auto & e : entries) {
        if (unfiled.count(e.fingerprint)) continue;
        const std::string fp = e.fingerprint, id = e.incident_id, host = e.host;
        if (step(std::move(e), my_lease, now)) ++changed;
        auto after = etcd_.get(keys_.outbox_entry(host, id));
        if (!after.ok() || after->kvs.empty()) continue;
        auto now_entry = parse_outbox_entry(after->kvs[0].value);
        if (!now_entry.ok() || now_entry->state != "done") unfiled.insert(fp);
    }
    return changed;
}

bool outbox_worker::step(outbox_entry e, int64_t my_lease, sys_time now) {
    auto known = etcd_.get(keys_.issue(e.fingerprint));
    if (!known.ok()) return false;
    const outbox_plan plan = plan_outbox(e, now, my_lease, !known->kvs.empty(), opts_.filing_grace);
    switch (plan.step) {
        case outbox_step::done:
        case outbox_step::wait: return false;
        case outbox_step::triage: {
            auto inc_kv = etcd_.get(keys_.incident(e.host, e.incident_id));
            if (!inc_kv.ok() || inc_kv->kvs.empty()) return false;
            auto inc = parse_fleet_incident(inc_kv->kvs[0].value);
            if (!inc.ok()) return false;
            e.triage = triage_(inc.value());
            return write(e);
        }
        case outbox_step::claim:
        case outbox_step::resume: {
            e.state = "filing";
            e.filing_by = host_;
            e.filing_lease = my_lease;
            e.filing_since = now_text(now);
            e.attempts += 1;
            if (!write(e)) return false;
            auto fresh = etcd_.get(keys_.outbox_entry(e.host, e.incident_id));
            if (!fresh.ok() || fresh->kvs.empty()) return false;
            e.mod_revision = fresh->kvs[0].mod_revision;
            return file(std::move(e), now);
        }
    }
    return false;
}

bool outbox_worker::record_failure(outbox_entry e, const gh_status & why, sys_time now) {
    auto backoff = opts_.initial_backoff;
    for (int i = 1; i < e.attempts && backoff < opts_.max_backoff; ++i) backoff *= 2;
    backoff = std::min(backoff, opts_.max_backoff);
    if (why.retry_after.count() > 0) backoff = std::max<std::chrono::milliseconds>(backoff, why.retry_after);
    if (!why.retryable) backoff = std::max<std::chrono::milliseconds>(backoff, std::min(opts_.max_backoff, std::chrono::milliseconds(60000)));
    e.last_error = why.message;
    e.next_attempt_at = now_text(now + backoff);
    rc::log::warn("fleet", "github_failed",
                  {{"incident", e.incident_id}, {"status", why.http_status}, {"error", why.message}, {"retry_in_ms", int64_t(backoff.count())}});
    write(e);
    return true;
}

bool outbox_worker::file(outbox_entry e, sys_time now) {
    auto inc_kv = etcd_.get(keys_.incident(e.host, e.incident_id));
    if (!inc_kv.ok() || inc_kv->kvs.empty()) return false;
    auto parsed = parse_fleet_incident(inc_kv->kvs[0].value);
    if (!parsed.ok()) return false;
    const fleet_incident & inc = parsed.value();
    const std::string mine = incident_marker(inc.id);

    // Look before writing: the issue of this fingerprint, and whether this incident is on it already.
    std::optional<github_issue> issue;
    auto known = etcd_.get(keys_.issue(e.fingerprint));
    if (known.ok() && !known->kvs.empty()) {
        const auto j = nlohmann::json::parse(known->kvs[0].value, nullptr, false);
        const int64_t number = j.is_object() ? j.value("number", int64_t(0)) : 0;
        github_issue got;
        if (number > 0) {
            gh_status s = github_.get_issue(number, got);
            if (s.ok) issue = got;
            else if (s.http_status != 404 && s.http_status != 410) return record_failure(std::move(e), s, now);
        }
    }
    if (!issue) {
        gh_status s = github_.find_issue(opts_.label, fingerprint_marker(e.fingerprint), issue);
        if (!s.ok) return record_failure(std::move(e), s, now);
    }

    auto finish = [&](const std::string & action, const github_issue & target) {
        e.state = "done";
        e.action = action;
        e.issue_number = target.number;
        e.issue_url = target.url;
        e.done_at = now_text(std::chrono::system_clock::now());
        e.last_error.clear();
        const ojson map = {{"number", target.number}, {"url", target.url}, {"fingerprint", e.fingerprint}, {"updated_at", e.done_at},
                           {"last_incident", e.incident_id}};
        const bool ok = write(e, {etcd_op::put(keys_.issue(e.fingerprint), map.dump())});
        rc::log::info("fleet", "incident_filed", {{"incident", e.incident_id}, {"action", action}, {"issue", target.number}});
        return ok;
    };

    int64_t previous = 0;
    if (issue) {
        if (issue->body.find(mine) != std::string::npos) return finish("created", *issue);
        std::vector<github_comment> comments;
        gh_status s = github_.list_comments(issue->number, comments);
        if (!s.ok) return record_failure(std::move(e), s, now);
        for (const auto & c : comments)
            if (c.body.find(mine) != std::string::npos) return finish(issue->state == "closed" ? "reopened" : "commented", *issue);
        const bool closed = issue->state == "closed";
        if (!closed || opts_.closed_policy == "reopen") {
            if (closed) {
                s = github_.set_state(issue->number, "open");
                if (!s.ok) return record_failure(std::move(e), s, now);
                issue->state = "open";
            }
            github_comment made;
            s = github_.add_comment(issue->number, render_comment(inc, closed), made);
            if (!s.ok) return record_failure(std::move(e), s, now);
            return finish(closed ? "reopened" : "commented", *issue);
        }
        previous = issue->number;  // closed, and the policy is to reference it from a new issue
    }
    triage_result t = e.triage ? *e.triage : triage_(inc);
    if (!e.triage) {
        e.triage = t;
    }
    github_issue created;
    gh_status s = github_.create_issue(t.title, render_issue_body(inc, t, previous), {opts_.label}, created);
    if (!s.ok) return record_failure(std::move(e), s, now);
    return finish("created", created);
}

}  // namespace rc::fleet
