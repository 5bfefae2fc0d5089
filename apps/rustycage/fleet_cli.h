#pragma once
// Flags and helpers the fleet commands (agent, fleet, incidents) share: where etcd is, the key
// prefix, durations like "10s".
#include <CLI/CLI.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "fleet/etcd_gateway.h"
#include "fleet/fleet_keys.h"

namespace rc::cli {

struct etcd_flags {
    std::string endpoints = "http://127.0.0.1:2379";
    std::string prefix = "fleet/";
};

// --etcd (RUSTYCAGE_ETCD) and --etcd-prefix (RUSTYCAGE_ETCD_PREFIX).
void add_etcd_flags(CLI::App & cmd, etcd_flags & f);
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
