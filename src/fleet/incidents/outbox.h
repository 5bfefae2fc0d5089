#pragma once
// The outbox: how an incident becomes exactly one GitHub issue, or one comment on the issue that
// already tracks its fingerprint, whatever dies in between. Each incident has an entry at
// <prefix>outbox/<incident id>:
//
//   pending ──triage──► pending(+triage) ──claim──► filing ──GitHub──► done
//                                                     ▲  │ failure: attempts+1, next_attempt_at
//                                                     └──┘
//
// Contract:
// * Durable before acted on: the claim ("filing", by whom, under which lease, since when) is written
//   with a compare on the entry's mod_revision before any GitHub write, and "done" (with the issue
//   number) likewise after it. Two triagers cannot both claim one revision of an entry.
// * The crash window — GitHub created the issue or comment, "done" was never written — is closed by
//   looking before writing: every filing first looks up the issue of the fingerprint (the issues/<fp>
//   record, else a listing by label for the hidden marker) and that issue's comments for this
//   incident's marker; what it finds is recorded as done instead of being written again.
// * A claim held under another, live-or-recent lease is left alone for `filing_grace` after it
//   was made (longer than a GitHub call may take), so a triager that lost its lease mid-call cannot
//   race its successor.
// * Nothing is dropped: failures (GitHub down, rate limits, bad token) only push next_attempt_at.
// * plan_outbox() is pure; outbox_worker does the I/O. A worker is used by one thread at a time.
#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "fleet/etcd/etcd_client.h"
#include "fleet/incidents/fleet_incident.h"
#include "fleet/etcd/fleet_keys.h"
#include "fleet/incidents/github_client.h"
#include "fleet/incidents/triage.h"

namespace rc::fleet {

using sys_time = std::chrono::system_clock::time_point;

struct outbox_entry {
    std::string incident_id, host, fingerprint;  // host: whose agent published the incident (its key range)
    std::string state = "pending";  // pending | filing | done
    std::string created_at;
    int attempts = 0;
    std::string next_attempt_at;  // RFC 3339; empty: now
    std::string last_error;
    std::optional<triage_result> triage;
    std::string filing_by, filing_since;
    int64_t filing_lease = 0;
    std::string action;  // done: created | commented | reopened
    int64_t issue_number = 0;
    std::string issue_url, done_at;
    int64_t mod_revision = 0;  // etcd's, for compares; not serialized
};

nlohmann::ordered_json to_json(const outbox_entry & e);
result<outbox_entry> parse_outbox_entry(const std::string & text);

enum class outbox_step { done, wait, triage, claim, resume };
struct outbox_plan {
    outbox_step step = outbox_step::wait;
    std::string why;
};
// `known_issue`: the fingerprint already has an issue (a recurrence needs no triage).
outbox_plan plan_outbox(const outbox_entry & e, sys_time now, int64_t my_lease, bool known_issue, std::chrono::milliseconds filing_grace);

// Markers hidden in issue and comment bodies (HTML comments: invisible on GitHub).
std::string fingerprint_marker(const std::string & fingerprint);
std::string incident_marker(const std::string & incident_id);
std::string render_issue_body(const fleet_incident & inc, const triage_result & t, int64_t previous_issue = 0);
std::string render_comment(const fleet_incident & inc, bool reopened);

struct outbox_options {
    std::string label = "rustycage-incident";
    std::string closed_policy = "reopen";  // reopen | reference (file a new issue that links the closed one)
    std::chrono::milliseconds filing_grace{30000};
    std::chrono::milliseconds initial_backoff{2000};
    std::chrono::milliseconds max_backoff{300000};
};

class outbox_worker {
  public:
    using triage_fn = std::function<triage_result(const fleet_incident &)>;
    outbox_worker(etcd_client & etcd, github_client & github, fleet_keys keys, std::string host, outbox_options opts, triage_fn triage);

    // Advances every entry that is due by at most one step each; returns how many changed. Errors:
    // unavailable when etcd could not be read (GitHub failures are recorded in the entries).
    result<int> run_once(int64_t my_lease, sys_time now = std::chrono::system_clock::now());

  private:
    bool step(outbox_entry e, int64_t my_lease, sys_time now);
    bool file(outbox_entry e, sys_time now);
    bool record_failure(outbox_entry e, const gh_status & why, sys_time now);
    bool write(const outbox_entry & e, const std::vector<etcd_op> & also = {});

    etcd_client & etcd_;
    github_client & github_;
    fleet_keys keys_;
    std::string host_;
    outbox_options opts_;
    triage_fn triage_;
};

}  // namespace rc::fleet
