#include "gateway/route_view.h"

#include <string_view>

namespace rc::gateway {

std::shared_ptr<const route_view> route_views::get(const std::string & model) {
    auto candidates = hosts_.routable(model);
    {
        std::lock_guard lock(mu_);
        if (auto it = views_.find(model); it != views_.end() && it->second->candidates == candidates) return it->second;
    }
    auto view = std::make_shared<route_view>();
    view->feed_numbers = feed_.numbers(candidates->hosts);
    std::vector<std::string_view> ids;
    for (const auto & h : candidates->hosts) ids.push_back(h.id);
    view->index_numbers = index_.numbers(ids);
    view->candidates = std::move(candidates);
    if (view->candidates->hosts.empty()) return view;  // not kept, as host_table::routable keeps no empty list
    std::lock_guard lock(mu_);
    if (views_.size() >= 64) views_.clear();
    views_[model] = view;
    return view;
}

}  // namespace rc::gateway
