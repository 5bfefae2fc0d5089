// `rustycage incidents list|show ID|ack ID`: the fleet's incidents in etcd — what went wrong on
// which host, its fingerprint, evidence, and whether it has been filed on GitHub.
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "cli_common.h"
#include "commands.h"
#include "fleet/view/fleet_view.h"
#include "fleet_cli.h"

namespace rc::cli {

namespace {

struct incidents_flags {
    etcd_flags etcd;
    bool json = false;
    bool all = false;
    std::string host;
    std::string id;
    std::string by;
};

int list(const incidents_flags & f) {
    auto etcd = open_etcd(f.etcd);
    if (!etcd.ok()) return fail(etcd.err());
    auto all = fleet::read_incidents(*etcd.value(), keys_for(f.etcd));
    if (!all.ok()) return fail("cannot read incidents from etcd at " + f.etcd.endpoints + ": " + all.err().message);
    std::vector<fleet::incident_view> shown;
    for (const auto & v : all.value())
        if ((f.host.empty() || v.incident.host == f.host) && (f.all || v.incident.acked_at.empty())) shown.push_back(v);
    if (f.json) {
        nlohmann::ordered_json out = nlohmann::ordered_json::array();
        for (const auto & v : shown) out.push_back(fleet::to_json(v));
        std::cout << out.dump(2) << "\n";
        return 0;
    }
    if (shown.empty()) {
        std::cout << (f.all ? "No incidents.\n" : "No open incidents (--all shows acknowledged ones too).\n");
        return 0;
    }
    text_table t({"ID", "HOST", "KIND", "TIME", "STATUS", "FINGERPRINT", "REASON"});
    for (const auto & v : shown)
        t.add({v.incident.id, v.incident.host, v.incident.kind, v.incident.time, fleet::filing_status(v), v.incident.fingerprint,
               shorten(v.incident.reason, 60)});
    t.print(std::cout);
    return 0;
}

int show(const incidents_flags & f) {
    auto etcd = open_etcd(f.etcd);
    if (!etcd.ok()) return fail(etcd.err());
    auto v = fleet::find_incident(*etcd.value(), keys_for(f.etcd), f.id);
    if (!v.ok()) return fail(v.err());
    if (f.json) {
        std::cout << fleet::to_json(v.value()).dump(2) << "\n";
        return 0;
    }
    const auto & i = v->incident;
    text_table t;
    t.add({"ID", i.id});
    t.add({"Host", i.host});
    t.add({"Kind", i.kind});
    t.add({"Time", i.time});
    if (!i.model.empty()) t.add({"Model", i.model + (i.digest.empty() ? "" : " (" + i.digest + ")")});
    t.add({"Reason", i.reason});
    t.add({"Fingerprint", i.fingerprint});
    t.add({"Versions", i.versions.dump()});
    t.add({"Status", fleet::filing_status(v.value())});
    if (!i.acked_at.empty()) t.add({"Acknowledged", i.acked_at + " by " + i.acked_by});
    if (v->outbox) {
        const auto & o = *v->outbox;
        if (o.state == "done") t.add({"Issue", o.issue_url + " (" + o.action + ")"});
        else t.add({"Filing", o.state + ", " + std::to_string(o.attempts) + " attempt(s)" + (o.last_error.empty() ? "" : ", last error: " + o.last_error)});
        if (o.triage) t.add({"Triage", o.triage->severity + " / " + o.triage->component + " by " + o.triage->source + ": " + o.triage->title});
    }
    t.print(std::cout);
    nlohmann::ordered_json evidence = i.evidence;
    auto tail = evidence.contains("log_tail") ? evidence["log_tail"] : nlohmann::ordered_json::array();
    evidence.erase("log_tail");
    if (!evidence.empty()) std::cout << "\nEvidence\n  " << evidence.dump() << "\n";
    if (tail.is_array() && !tail.empty()) {
        std::cout << "\nLog tail\n";
        for (const auto & l : tail)
            if (l.is_string()) std::cout << "  " << l.get<std::string>() << "\n";
    }
    return 0;
}

int ack(const incidents_flags & f) {
    auto etcd = open_etcd(f.etcd);
    if (!etcd.ok()) return fail(etcd.err());
    std::string by = f.by;
    if (by.empty()) {
        const char * user = std::getenv("USER");
        char host[256] = {0};
        gethostname(host, sizeof host - 1);
        by = std::string(user ? user : "someone") + "@" + host;
    }
    auto inc = fleet::ack_incident(*etcd.value(), keys_for(f.etcd), f.id, by);
    if (!inc.ok()) return fail(inc.err());
    std::cout << "acknowledged " << inc->id << " (" << inc->acked_by << " at " << inc->acked_at << ")\n";
    return 0;
}

}  // namespace

void register_incidents(CLI::App & app, std::function<int()> & action) {
    auto * cmd = app.add_subcommand("incidents", "What went wrong on the fleet's hosts (from etcd)");
    cmd->require_subcommand(1);
    auto lf = std::make_shared<incidents_flags>();
    auto * l = cmd->add_subcommand("list", "Open incidents, newest first (--all: acknowledged ones too)");
    add_etcd_flags(*l, lf->etcd);
    l->add_option("--host", lf->host, "Only this host's");
    l->add_flag("--all", lf->all, "Include acknowledged incidents");
    l->add_flag("--json", lf->json, "Print JSON");
    l->callback([lf, &action] { action = [lf] { return list(*lf); }; });

    auto sf = std::make_shared<incidents_flags>();
    auto * s = cmd->add_subcommand("show", "One incident with its evidence and filing status");
    add_etcd_flags(*s, sf->etcd);
    s->add_option("ID", sf->id, "The incident id (a unique prefix will do)")->required();
    s->add_flag("--json", sf->json, "Print JSON");
    s->callback([sf, &action] { action = [sf] { return show(*sf); }; });

    auto af = std::make_shared<incidents_flags>();
    auto * a = cmd->add_subcommand("ack", "Acknowledge an incident (it leaves the open list)");
    add_etcd_flags(*a, af->etcd);
    a->add_option("ID", af->id, "The incident id (a unique prefix will do)")->required();
    a->add_option("--by", af->by, "Who acknowledges (default: $USER@hostname)");
    a->callback([af, &action] { action = [af] { return ack(*af); }; });
}

}  // namespace rc::cli
