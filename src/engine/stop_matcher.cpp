#include "engine/stop_matcher.h"

#include <algorithm>

#include "util/utf8.h"

namespace rc::engine {

stop_matcher::stop_matcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
    std::erase_if(stops_, [](const std::string & s) { return s.empty(); });
}

stop_matcher::step stop_matcher::feed(std::string_view piece) {
    step out;
    if (stopped_) {
        out.stopped = true;
        return out;
    }
    pending_ += piece;

    // Earliest full match of any stop string wins.
    size_t best = std::string::npos;
    const std::string * best_word = nullptr;
    for (const auto & s : stops_) {
        size_t at = pending_.find(s);
        if (at != std::string::npos && at < best) {
            best = at;
            best_word = &s;
        }
    }
    if (best_word) {
        out.visible = pending_.substr(0, best);
        out.stopped = true;
        out.stop_word = *best_word;
        pending_.clear();
        stopped_ = true;
        return out;
    }

    // Hold back the longest suffix that is a proper prefix of some stop string.
    size_t hold = 0;
    for (const auto & s : stops_) {
        size_t max_len = std::min(s.size() - 1, pending_.size());
        for (size_t len = max_len; len > hold; --len) {
            if (std::string_view(pending_).substr(pending_.size() - len) == std::string_view(s).substr(0, len)) {
                hold = len;
                break;
            }
        }
    }
    size_t emit = pending_.size() - hold;
    emit = utf8::complete_prefix_length(std::string_view(pending_).substr(0, emit));
    out.visible = pending_.substr(0, emit);
    pending_.erase(0, emit);
    return out;
}

std::string stop_matcher::flush() {
    if (stopped_) return {};
    std::string rest;
    rest.swap(pending_);
    return rest;
}

}  // namespace rc::engine
