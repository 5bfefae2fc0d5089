#pragma once
// The rollout's decisions, pure (no I/O, the clock passed in): the plan — canary, cohorts, slot
// capacities — and what the driver does next with a rollout given its hosts' progress. The driver
// (rollout_driver.h) writes what these return; tests call them directly.
//
// The plan keeps every model served: a model served by n planned hosts gets a semaphore of capacity
// min(--max-unavailable, n − 1) (1 when n == 1: a model on a single host cannot stay served while that
// host cuts over; the plan notes it), and a cohort never holds more of a model's hosts than that, so
// its hosts queue on the semaphore in the cohort order instead of racing. "all" caps the hosts in
// cutover fleet-wide at --max-unavailable. The canary is the host whose models are all served
// elsewhere (fewest models first, then by id), so a bad build is found where it hurts least.
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "fleet/rollout/rollout_record.h"

namespace rc::fleet {

using sys_time = std::chrono::system_clock::time_point;

struct rollout_plan {
    std::vector<std::vector<std::string>> cohorts;
    std::map<std::string, int> slots;
    std::vector<std::string> notes;
};
rollout_plan plan_rollout(const std::vector<rollout_planned_host> & hosts, int cohort_size, int max_unavailable);

// The semaphores a host takes before its cutover: "all" and one per model it serves.
std::vector<std::pair<std::string, int>> slots_for(const rollout_record & r, const std::string & host);

// What the driver sees of a host right now.
struct live_host {
    bool registered = false;
    bool ready = false;
    std::string version;
    std::vector<std::string> models;  // ready models
    // How long the driver has seen it unregistered, on the driver's own monotonic clock (never
    // another host's wall clock: docs/FLEET.md "Time").
    std::chrono::milliseconds unregistered_for{0};
};

enum class rollout_action { none, start, advance, finish, halt };
struct rollout_decision {
    rollout_action action = rollout_action::none;
    rollout_record next;  // the record to write (action != none)
};
// pending → plan and start (halt when no host is registered); running → halt on a failed host or
// one unregistered for longer than host_timeout, advance when the cohort is done, finish after the
// last. `now` only stamps the record's times for people; no decision compares it with a time another
// host wrote.
rollout_decision decide_rollout(const rollout_record & r, const std::map<std::string, host_progress> & progress,
                                const std::map<std::string, live_host> & live, sys_time now);

}  // namespace rc::fleet
