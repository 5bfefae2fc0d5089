#pragma once
// Flags and helpers the fleet commands (agent, fleet, incidents) share: where etcd is, the key
// prefix, durations like "10s".
#include <CLI/CLI.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fleet/etcd/etcd_gateway.h"
#include "fleet/etcd/fleet_keys.h"

namespace rc::cli {

struct etcd_flags {
    std::string endpoints = "http://127.0.0.1:2379";
    std::string prefix = "fleet/";
    std::string cacert, cert, key;  // TLS (PEM files)
    std::string user, password_file;
    bool insecure = false;
    std::string flag = "etcd";  // what the flags are called (errors name them)
};

// --etcd (RUSTYCAGE_ETCD), --etcd-prefix, --etcd-cacert, --etcd-cert, --etcd-key, --etcd-user,
// --etcd-password-file, --etcd-insecure (each also RUSTYCAGE_ETCD_…, the installer's env file).
// `flag` renames them and their variables ("fleet-etcd": serve's --fleet-etcd-cacert …, read from
// RUSTYCAGE_FLEET_ETCD_CACERT …, so an agent's own RUSTYCAGE_ETCD_… never leak into its server).
void add_etcd_flags(CLI::App & cmd, etcd_flags & f, const std::string & flag = "etcd");
// The connection the flags describe: endpoints, TLS, credentials (the password read from its file),
// and the plain-HTTP check. Errors name the bad flag.
result<fleet::etcd_options> etcd_options_for(const etcd_flags & f);
// The loud warning an agent or a gateway (`role`) gives at start when the fleet's etcd is on the
// network without authentication (fleet::fleet_auth_off_on_network): on stderr and in the log.
void warn_if_fleet_auth_off(const fleet::etcd_options & o, const char * role);
// The same flags as arguments for a child (`--fleet-etcd` … for the agent's server).
std::vector<std::string> etcd_args(const etcd_flags & f, const std::string & flag);
// The gateway for the flags; errors name the bad flag.
result<std::unique_ptr<fleet::etcd_gateway>> open_etcd(const etcd_flags & f);
fleet::fleet_keys keys_for(const etcd_flags & f);

// "10s", "500ms", "2m" → milliseconds; throws CLI::ValidationError naming `flag`.
std::chrono::milliseconds parse_duration_flag(const std::string & flag, const std::string & text);
// `fleet upgrade` and `fleet rollout …` under the `fleet` command (cli_rollout.cpp).
void register_rollout(CLI::App & fleet_cmd, std::function<int()> & action);

// "3s", "4m", "2h" — compact, for tables.
std::string compact_age(int64_t seconds);

}  // namespace rc::cli
