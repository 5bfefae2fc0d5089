#pragma once
// Counting semaphores in etcd whose holders are bound to their host's lease: a slot is the key
// <p>rollout-slots/<rollout>/<sem>/<host> on the holder's lease, so a host that dies frees its slots
// when its lease expires (FleetLock/locksmith semaphores never do). Several semaphores are taken
// together or not at all.
//
// Why it is safe: every acquisition rewrites each semaphore's guard key <p>rollout-sems/<rollout>/<sem>
// in the same transaction that adds the holder, and compares that key's mod_revision with the one
// read together with the holders (one read transaction). Two hosts that read the same holders cannot
// both win; holders only ever leave between the read and the write (release, lease expiry), which can
// only make the count read too high, never too low.
//
// Contract: any thread; errors are etcd's (unavailable). A host's own old slot (an earlier lease of
// the same host) does not count against it and is replaced.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "fleet/etcd/etcd_client.h"
#include "fleet/etcd/fleet_keys.h"

namespace rc::fleet {

struct slot_holders {
    std::vector<std::vector<std::string>> holders;  // per semaphore asked, other hosts holding it
    int64_t revision = 0;
};

class rollout_slots {
  public:
    rollout_slots(etcd_client & etcd, fleet_keys keys, std::string rollout_id, std::string host);

    // Takes one slot of every semaphore (name, capacity), or none. `admit` sees the other holders
    // and may refuse (e.g. a model whose other host is not serving); its reason comes back in `why`.
    // Returns true when taken.
    result<bool> try_acquire(const std::vector<std::pair<std::string, int>> & sems, int64_t lease, std::string & why,
                             const std::function<bool(const slot_holders &, std::string &)> & admit = {});
    status release(const std::vector<std::pair<std::string, int>> & sems);
    // Hosts holding `sem` now.
    result<std::vector<std::string>> holders(const std::string & sem);

  private:
    etcd_client & etcd_;
    fleet_keys keys_;
    std::string rollout_, host_;
};

}  // namespace rc::fleet
