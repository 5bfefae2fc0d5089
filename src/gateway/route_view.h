#pragma once
// What routing a request for one model reads of its candidate hosts, resolved once per change of
// the candidates and shared by the requests until the next: the hosts themselves
// (host_table::routable) and the numbers the KV event feed and the block index know them by. A
// routed request then reads each host's stream and block table by number — no host looked up by
// name, no host copied — so the per-host part of routing stays a few array reads at 64 hosts.
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "gateway/block_index.h"
#include "gateway/host_table.h"
#include "gateway/kv_event_feed.h"

namespace rc::gateway {

struct route_view {
    std::shared_ptr<const host_table::candidate_set> candidates;
    std::vector<kv_event_feed::host_number> feed_numbers;  // parallel to candidates->hosts
    std::vector<block_index::host_number> index_numbers;   // parallel to candidates->hosts
    std::span<const host_view> hosts() const { return candidates->hosts; }
};

class route_views {
  public:
    route_views(host_table & hosts, kv_event_feed & feed, block_index & index) : hosts_(hosts), feed_(feed), index_(index) {}
    // The view of `model`'s candidates now (every routable host for "").
    std::shared_ptr<const route_view> get(const std::string & model);

  private:
    host_table & hosts_;
    kv_event_feed & feed_;
    block_index & index_;
    std::mutex mu_;
    std::map<std::string, std::shared_ptr<const route_view>> views_;  // by the model a request named; bounded
};

}  // namespace rc::gateway
