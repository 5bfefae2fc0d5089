// `rustycage fleet status|forget` (and `upgrade|rollout`, cli_rollout.cpp): the fleet as etcd knows it — one line per host (state, version,
// models, KV tiers, heartbeat age, open incidents), or JSON for scripts.
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "api/ollama/keep_alive.h"
#include "cli_common.h"
#include "commands.h"
#include "fleet/view/fleet_view.h"
#include "fleet_cli.h"
#include "util/byte_size.h"
#include "util/log.h"

namespace rc::cli {

void add_etcd_flags(CLI::App & cmd, etcd_flags & f, const std::string & flag) {
    f.flag = flag;
    // --etcd-cacert: RUSTYCAGE_ETCD_CACERT; --fleet-etcd-cacert: RUSTYCAGE_FLEET_ETCD_CACERT.
    auto var = [](std::string name) {
        for (auto & c : name) c = c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        return "RUSTYCAGE_" + name;
    };
    auto opt = [&](const std::string & suffix, std::string & into, const std::string & help) {
        return cmd.add_option("--" + flag + suffix, into, help)->envname(var(flag + suffix));
    };
    if (flag == "etcd") {
        opt("", f.endpoints, "etcd members, comma-separated (https:// with TLS)")->capture_default_str();
        opt("-prefix", f.prefix, "The fleet's key prefix in etcd")->capture_default_str();
    }
    opt("-cacert", f.cacert, "CA certificate (PEM) that signed the etcd members' certificates");
    opt("-cert", f.cert, "Client certificate (PEM) for etcd");
    opt("-key", f.key, "The client certificate's key (PEM)");
    opt("-user", f.user, "etcd user (with --" + flag + "-password-file)");
    opt("-password-file", f.password_file, "File holding the etcd user's password");
    cmd.add_flag("--" + flag + "-insecure", f.insecure, "Allow plain http:// to etcd members off loopback (anyone on the path reads and changes the fleet)")
        ->envname(var(flag + "-insecure"));
}

result<fleet::etcd_options> etcd_options_for(const etcd_flags & f) {
    const std::string flag = "--" + f.flag;
    auto eps = fleet::parse_etcd_endpoints(f.endpoints);
    if (!eps.ok()) return make_error(errc::invalid_argument, flag + ": " + eps.err().message);
    if (!fleet::valid_fleet_prefix(f.prefix)) return make_error(errc::invalid_argument, (f.flag == "etcd" ? "--etcd-prefix '" : "--fleet-prefix '") + f.prefix + "' must end in '/'");
    fleet::etcd_options o;
    o.endpoints = eps.value();
    o.ca_file = f.cacert;
    o.cert_file = f.cert;
    o.key_file = f.key;
    o.allow_insecure = f.insecure;
    for (const auto & [file, name] : {std::pair{f.cacert, "-cacert"}, std::pair{f.cert, "-cert"}, std::pair{f.key, "-key"}})
        if (!file.empty() && !std::filesystem::exists(file)) return make_error(errc::invalid_argument, flag + name + " " + file + " does not exist");
    if (!f.user.empty()) {
        if (f.password_file.empty()) return make_error(errc::invalid_argument, flag + "-user needs " + flag + "-password-file");
        std::ifstream in(f.password_file);
        if (!in) return make_error(errc::invalid_argument, flag + "-password-file " + f.password_file + " cannot be read");
        std::getline(in, o.password);
        while (!o.password.empty() && (o.password.back() == '\r' || o.password.back() == ' ')) o.password.pop_back();
        o.user = f.user;
    }
    if (auto st = fleet::check_etcd_security(o, flag); !st) return st.err();
    return o;
}

std::vector<std::string> etcd_args(const etcd_flags & f, const std::string & flag) {
    std::vector<std::string> out = {"--" + flag, f.endpoints};
    for (const auto & [v, name] : {std::pair{f.cacert, "-cacert"}, std::pair{f.cert, "-cert"}, std::pair{f.key, "-key"}, std::pair{f.user, "-user"},
                                   std::pair{f.password_file, "-password-file"}})
        if (!v.empty()) out.insert(out.end(), {"--" + flag + name, v});
    if (f.insecure) out.push_back("--" + flag + "-insecure");
    return out;
}

void warn_if_fleet_auth_off(const fleet::etcd_options & o, const char * role) {
    if (!fleet::fleet_auth_off_on_network(o)) return;
    std::cerr << "WARNING: the " << role << " reaches etcd on the network without authentication: anyone who can reach etcd can\n"
              << "WARNING: register a host and receive chats and API keys. Turn auth on (scripts/fleet-etcd-setup.sh, docs/FLEET.md).\n";
    rc::log::warn("fleet", "etcd_auth_off", {{"role", role}, {"note", "anyone who reaches etcd can register a host and receive chats and keys"}});
}

result<std::unique_ptr<fleet::etcd_gateway>> open_etcd(const etcd_flags & f) {
    auto o = etcd_options_for(f);
    if (!o.ok()) return o.err();
    return std::make_unique<fleet::etcd_gateway>(o.value());
}

fleet::fleet_keys keys_for(const etcd_flags & f) {
    fleet::fleet_keys k;
    k.prefix = f.prefix;
    return k;
}

std::chrono::milliseconds parse_duration_flag(const std::string & flag, const std::string & text) {
    auto d = api::ollama::parse_go_duration(text);
    if (!d || d->count() < 0) throw CLI::ValidationError(flag, "'" + text + "' is not a duration like 10s, 500ms or 2m");
    return std::chrono::duration_cast<std::chrono::milliseconds>(*d);
}

std::string compact_age(int64_t s) {
    if (s < 0) return "-";
    if (s < 120) return std::to_string(s) + "s";
    if (s < 7200) return std::to_string(s / 60) + "m";
    if (s < 172800) return std::to_string(s / 3600) + "h";
    return std::to_string(s / 86400) + "d";
}

namespace {

struct status_flags {
    etcd_flags etcd;
    bool json = false;
};

std::string models_cell(const fleet::host_record & r) {
    std::string out;
    for (const auto & m : r.models) {
        if (!out.empty()) out += ",";
        out += m.name;
        if (m.status != "ready") out += "[" + m.status + "]";
        else if (m.loaded) out += "*";
    }
    return out.empty() ? "-" : shorten(out, 48);
}

std::string tiers_cell(const fleet::host_record & r) {
    const auto & k = r.kv;
    if (k.context_cells_total == 0 && k.host_budget == 0 && k.disk_budget == 0) return "-";
    char hit[16];
    std::snprintf(hit, sizeof hit, "%.0f%%", k.hit_rate() * 100);
    return "ctx " + std::to_string(k.context_cells_used) + "/" + std::to_string(k.context_cells_total) + " host " + format_byte_size(k.host_bytes) +
           " disk " + format_byte_size(k.disk_bytes) + " hit " + hit;
}

int status(const status_flags & f) {
    auto etcd = open_etcd(f.etcd);
    if (!etcd.ok()) return fail(etcd.err());
    auto snap = fleet::read_fleet(*etcd.value(), keys_for(f.etcd));
    if (!snap.ok()) return fail("cannot read the fleet from etcd at " + f.etcd.endpoints + ": " + snap.err().message);
    if (f.json) {
        nlohmann::ordered_json hosts = nlohmann::ordered_json::array();
        for (const auto & h : snap->hosts) hosts.push_back(fleet::to_json(h));
        nlohmann::ordered_json out = {{"schema", fleet::fleet_schema_version}, {"hosts", hosts},
                                      {"triager", snap->triager.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(snap->triager)},
                                      {"alarms", snap->alarms}};
        std::cout << out.dump(2) << "\n";
        return 0;
    }
    // First: during an alarm (NOSPACE) etcd refuses writes, so agents cannot register or renew.
    for (const auto & a : snap->alarms)
        std::cout << "etcd ALARM: " << a << " — etcd refuses writes until it is cleared (docs/FLEET.md \"Failure modes\")\n";
    if (snap->hosts.empty()) {
        std::cout << "No hosts in the fleet yet: start `rustycage agent --etcd " << f.etcd.endpoints << " --host-id NAME --data-dir DIR` on each.\n";
        return 0;
    }
    text_table t({"HOST", "STATE", "VERSION", "MODELS", "KV TIERS", "HEARTBEAT", "INCIDENTS", "NOTE"});
    for (const auto & h : snap->hosts) {
        const std::string version = h.record ? h.record->version + " " + h.record->backend : "-";
        const std::string heartbeat = h.ttl_left >= 0 ? compact_age(h.ttl_granted - h.ttl_left) + " ago" : "-";
        t.add({h.id, h.state, version, h.record ? models_cell(*h.record) : "-", h.record ? tiers_cell(*h.record) : "-", heartbeat,
               std::to_string(h.open_incidents), shorten(h.why, 60)});
    }
    t.print(std::cout);
    std::cout << "\ntriager: " << (snap->triager.empty() ? "(none elected)" : snap->triager) << "    models: * loaded, [status] not servable\n";
    return 0;
}

int forget(const etcd_flags & f, const std::string & id) {
    auto etcd = open_etcd(f);
    if (!etcd.ok()) return fail(etcd.err());
    const auto keys = keys_for(f);
    auto live = etcd.value()->get(keys.host(id));
    if (!live.ok()) return fail(live.err());
    if (!live->kvs.empty()) return fail("host '" + id + "' is registered (its agent runs): stop the agent first");
    auto n = etcd.value()->del(keys.roster_entry(id));
    if (!n.ok()) return fail(n.err());
    if (n.value() == 0) return fail("no host '" + id + "' in the fleet");
    // Its own views of others, and every other host's view of it.
    (void) etcd.value()->del(keys.health_by(id), true);
    if (auto all = etcd.value()->get_prefix(keys.health()); all.ok())
        for (const auto & kv : all->kvs)
            if (fleet::fleet_keys::pair_under(kv.key, keys.health()).second == id) (void) etcd.value()->del(kv.key);
    std::cout << "forgot " << id << "\n";
    return 0;
}

}  // namespace

void register_fleet(CLI::App & app, std::function<int()> & action) {
    auto * cmd = app.add_subcommand("fleet", "The fleet of hosts as etcd knows it");
    cmd->require_subcommand(1);
    auto sf = std::make_shared<status_flags>();
    auto * st = cmd->add_subcommand("status", "One line per host: state, version, models, KV tiers, heartbeat, incidents");
    add_etcd_flags(*st, sf->etcd);
    st->add_flag("--json", sf->json, "Print JSON (schema 1: docs/FLEET.md)");
    st->callback([sf, &action] { action = [sf] { return status(*sf); }; });

    auto ff = std::make_shared<etcd_flags>();
    auto id = std::make_shared<std::string>();
    auto * fg = cmd->add_subcommand("forget", "Remove a host that is down for good from the roster");
    add_etcd_flags(*fg, *ff);
    fg->add_option("HOST", *id, "The host id")->required();
    fg->callback([ff, id, &action] { action = [ff, id] { return forget(*ff, *id); }; });
    register_rollout(*cmd, action);
}

}  // namespace rc::cli
