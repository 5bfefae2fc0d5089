// `rustycage fleet upgrade` and `rustycage fleet rollout status|pause|resume|abort`: cohort
// upgrades (src/fleet/rollout_*.h, docs/FLEET.md). The CLI only writes what the operator asks into
// etcd; the elected driver and the hosts' agents do the rest.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <iostream>

#include "cli_common.h"
#include "commands.h"
#include "fleet/rollout/rollout_record.h"
#include "fleet_cli.h"
#include "store/timestamps.h"

namespace rc::cli {

namespace {

using ojson = nlohmann::ordered_json;

struct upgrade_flags {
    etcd_flags etcd;
    std::string version, artifact, sha256, signature, bake = "60s", host_timeout = "10m";
    int cohort_size = 1, max_unavailable = 1;
    std::vector<std::string> smoke_models;
    bool json = false;
};

struct rollout_flags {
    etcd_flags etcd;
    std::string id;
    bool json = false;
};

std::string who() {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    const char * user = std::getenv("USER");
    return std::string(user && *user ? user : "someone") + "@" + host;
}

int upgrade(const upgrade_flags & f) {
    fleet::rollout_record r;
    r.id = fleet::new_rollout_id();
    try {
        r.spec.bake = parse_duration_flag("--bake", f.bake);
        r.spec.host_timeout = parse_duration_flag("--host-timeout", f.host_timeout);
    } catch (const CLI::ValidationError & e) {
        return fail(e.what());
    }
    if (!fleet::valid_version_name(f.version)) return fail("--to '" + f.version + "' is not a version name (1-64 of A-Z a-z 0-9 . _ + -)");
    std::string sha = f.sha256;
    std::transform(sha.begin(), sha.end(), sha.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    if (sha.size() != 64 || !std::all_of(sha.begin(), sha.end(), [](unsigned char c) { return std::isxdigit(c); }))
        return fail("--sha256 must be the artifact's SHA-256: 64 hex digits");
    std::string artifact = f.artifact;
    if (!artifact.starts_with("http://") && !artifact.starts_with("https://")) {
        if (artifact.starts_with("file://")) artifact = artifact.substr(7);
        std::error_code ec;
        artifact = std::filesystem::absolute(artifact, ec).lexically_normal().string();  // the hosts read this path
    }
    r.spec.version = f.version;
    r.spec.artifact = artifact;
    r.spec.sha256 = sha;
    std::string sig = f.signature;
    if (!sig.empty() && !sig.starts_with("http://") && !sig.starts_with("https://")) {
        if (sig.starts_with("file://")) sig = sig.substr(7);
        std::error_code ec;
        sig = std::filesystem::absolute(sig, ec).lexically_normal().string();
    }
    r.spec.signature = sig;
    r.spec.cohort_size = f.cohort_size;
    r.spec.max_unavailable = f.max_unavailable;
    r.spec.smoke_models = f.smoke_models;
    r.created_at = store::format_rfc3339(std::chrono::system_clock::now());
    r.created_by = who();
    r.message = "waiting for the driver to plan it";
    auto etcd = open_etcd(f.etcd);
    if (!etcd.ok()) return fail(etcd.err());
    const auto keys = keys_for(f.etcd);
    auto w = fleet::create_rollout(*etcd.value(), keys, r);
    if (!w.ok()) return fail("cannot write the rollout to etcd at " + f.etcd.endpoints + ": " + w.err().message);
    if (!w.value()) {
        auto active = fleet::read_rollout(*etcd.value(), keys);
        const std::string which = active.ok() ? active->rollout.id + " (" + active->rollout.state + ", to " + active->rollout.spec.version + ")" : "another rollout";
        return fail(which + " is not finished: wait for it, or `rustycage fleet rollout abort` it first");
    }
    if (f.json) std::cout << fleet::to_json(fleet::rollout_view{r, {}}).dump(2) << "\n";
    else std::cout << "rollout " << r.id << " to " << r.spec.version << " written; follow it with `rustycage fleet rollout status`\n";
    return 0;
}

int show_status(const rollout_flags & f) {
    auto etcd = open_etcd(f.etcd);
    if (!etcd.ok()) return fail(etcd.err());
    auto v = fleet::read_rollout(*etcd.value(), keys_for(f.etcd), f.id);
    if (!v.ok()) return fail(v.err());
    const auto j = fleet::to_json(v.value());
    if (f.json) {
        std::cout << j.dump(2) << "\n";
        return 0;
    }
    const auto & r = v->rollout;
    std::cout << "rollout " << r.id << " to " << r.spec.version << ": " << r.state;
    if (!j["cohort"].get<std::string>().empty() && !r.finished()) std::cout << " (" << j["cohort"].get<std::string>() << ")";
    std::cout << "  " << j["done"].get<int>() << "/" << j["total"].get<int>() << " hosts done";
    if (!r.driver.empty()) std::cout << "  driver " << r.driver;
    std::cout << "\n";
    if (!r.message.empty()) std::cout << r.message << "\n";
    std::cout << "artifact " << r.spec.artifact << "  sha256 " << r.spec.sha256.substr(0, 16) << "…  cohort size " << r.spec.cohort_size
              << "  max unavailable " << r.spec.max_unavailable << "  bake " << r.spec.bake.count() / 1000.0 << "s\n";
    for (const auto & n : r.notes) std::cout << "note: " << n << "\n";
    if (r.cohorts.empty()) return 0;
    text_table t({"HOST", "COHORT", "STEP", "FROM", "UPDATED", "MESSAGE"});
    for (const auto & h : j["hosts"]) {
        const int c = h["cohort"].get<int>();
        t.add({h["host"].get<std::string>(), c == 0 ? "canary" : std::to_string(c), h["step"].get<std::string>(), h["from_version"].get<std::string>(),
               h["updated_at"].get<std::string>(), shorten(h["message"].get<std::string>(), 70)});
    }
    std::cout << "\n";
    t.print(std::cout);
    return 0;
}

// pause | resume | abort: one compare-and-set on the rollout, retried when the driver wrote meanwhile.
int change(const rollout_flags & f, const std::string & verb) {
    auto etcd = open_etcd(f.etcd);
    if (!etcd.ok()) return fail(etcd.err());
    const auto keys = keys_for(f.etcd);
    for (int attempt = 0; attempt < 20; ++attempt) {
        auto v = fleet::read_rollout(*etcd.value(), keys, f.id);
        if (!v.ok()) return fail(v.err());
        fleet::rollout_record r = v->rollout;
        if (r.finished()) return fail("rollout " + r.id + " is " + r.state + " already");
        const std::string now = store::format_rfc3339(std::chrono::system_clock::now());
        std::string after;
        if (verb == "pause") {
            if (r.state == "paused") return fail("rollout " + r.id + " is paused already");
            r.request = {"paused", "paused by " + who() + ": no host starts a new step; a host cutting over finishes", now};
            after = "paused";
        } else if (verb == "resume") {
            if (r.state != "paused") return fail("rollout " + r.id + " is " + r.state + ", not paused");
            r.request = {"", "resumed by " + who(), now};
            after = r.driver_state;
        } else {
            r.request = {"aborted", "aborted by " + who() + ": hosts that have not cut over stay on their version", now};
            after = "aborted";
        }
        auto w = fleet::request_rollout(*etcd.value(), keys, r);
        if (!w.ok()) return fail(w.err());
        if (w.value()) {
            std::cout << "rollout " << r.id << ": " << after << "\n";
            return 0;
        }
    }
    return fail("the rollout kept changing under us; try again");
}

}  // namespace

void register_rollout(CLI::App & fleet_cmd, std::function<int()> & action) {
    auto uf = std::make_shared<upgrade_flags>();
    auto * up = fleet_cmd.add_subcommand("upgrade", "Start a cohort upgrade of every host to a release artifact");
    add_etcd_flags(*up, uf->etcd);
    up->add_option("--to", uf->version, "The version the hosts end on (the artifact's VERSION)")->required();
    up->add_option("--artifact", uf->artifact, "The release tarball: an http(s) URL or a path every host can read")->required();
    up->add_option("--sha256", uf->sha256, "The tarball's SHA-256 (hosts refuse anything else, before unpacking)")->required();
    up->add_option("--signature", uf->signature, "The artifact's signature (rustycage release sign): URL or path (default: the artifact's + .sig); hosts verify it with their own trusted keys");
    up->add_option("--cohort-size", uf->cohort_size, "Hosts per cohort after the canary")->check(CLI::Range(1, 1000))->capture_default_str();
    up->add_option("--max-unavailable", uf->max_unavailable, "Hosts cutting over at once (per model: also never its last serving host)")
        ->check(CLI::Range(1, 1000))
        ->capture_default_str();
    up->add_option("--smoke-model", uf->smoke_models, "A model each host's new server must serve before and after cutover (repeatable)");
    up->add_option("--bake", uf->bake, "How long each upgraded host is watched for crashes and 5xx")->capture_default_str();
    up->add_option("--host-timeout", uf->host_timeout, "A host of the cohort down this long halts the rollout")->capture_default_str();
    up->add_flag("--json", uf->json, "Print the rollout as JSON");
    up->callback([uf, &action] { action = [uf] { return upgrade(*uf); }; });

    auto * ro = fleet_cmd.add_subcommand("rollout", "Follow or steer the cohort upgrade");
    ro->require_subcommand(1);
    for (const std::string verb : {"status", "pause", "resume", "abort"}) {
        auto rf = std::make_shared<rollout_flags>();
        const char * help = verb == "status"  ? "The rollout (active, else the newest): state, cohort, each host's step"
                            : verb == "pause" ? "No host starts a new step until resume"
                            : verb == "resume" ? "Go on with a paused rollout"
                                               : "Stop the rollout: hosts that have not cut over stay on their version";
        auto * sub = ro->add_subcommand(verb, help);
        add_etcd_flags(*sub, rf->etcd);
        sub->add_option("ID", rf->id, "A rollout id (default: the active one)");
        if (verb == "status") sub->add_flag("--json", rf->json, "Print JSON (docs/FLEET.md)");
        sub->callback([rf, verb, &action] { action = [rf, verb] { return verb == "status" ? show_status(*rf) : change(*rf, verb); }; });
    }
}

}  // namespace rc::cli
