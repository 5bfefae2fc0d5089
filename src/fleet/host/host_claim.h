#pragma once
// Who owns a host id: <prefix>hosts/<id> is created only when absent, on the claiming agent's lease,
// so one id has one agent. The lease is remembered in a file of the agent's data directory; a key
// held by that lease is this data directory's previous life, which a restarted agent takes back at
// once (revoking the old lease) instead of waiting for it to lapse. docs/FLEET.md "The agent".
#include <cstdint>
#include <filesystem>
#include <string>

#include "fleet/etcd/etcd_client.h"
#include "fleet/etcd/fleet_keys.h"

namespace rc::fleet {

struct host_claim {
    std::string holder;  // "" when the key is now ours; else who holds it ("the agent at URL (pid N, started T)")
};

// Creates hosts/<id> with `record` on `lease` unless another agent holds it; remembers the lease in
// `lease_file` when created. Errors: etcd's (unavailable, permission_denied under roles).
result<host_claim> claim_host_id_key(etcd_client & etcd, const fleet_keys & keys, const std::string & id, const std::string & record,
                                     int64_t lease, const std::filesystem::path & lease_file);

// Who else holds hosts/<id>: "" when nobody, or only this data directory's previous life.
result<std::string> host_id_holder(etcd_client & etcd, const fleet_keys & keys, const std::string & id, const std::filesystem::path & lease_file);

}  // namespace rc::fleet
