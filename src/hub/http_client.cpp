#include "hub/http_client.h"

#include <chrono>

#include "hub/hub_errors.h"

namespace rc::hub {

http_client::http_client(hub_config cfg) : cfg_(std::move(cfg)) {}

http::client_request http_client::request(const std::string & url, const std::vector<std::string> & headers) const {
    http::client_request req;
    req.url = url;
    if (cfg_.has_token()) req.headers.push_back("Authorization: Bearer " + cfg_.token);
    req.headers.insert(req.headers.end(), headers.begin(), headers.end());
    req.user_agent = cfg_.user_agent;
    req.follow_redirects = true;
    req.connect_timeout = std::chrono::seconds(cfg_.connect_timeout_s);
    req.low_speed_bytes = cfg_.low_speed_bytes;
    req.low_speed_time = std::chrono::seconds(cfg_.low_speed_time_s);
    return req;
}

result<stream_outcome> http_client::stream(const std::string & url, const std::vector<std::string> & headers,
                                           const stream_callbacks & cb, transport_failure * failure) const {
    http::client_request req = request(url, headers);
    req.timeout = std::chrono::milliseconds(0);  // a 40 GB file may take hours: only the low-speed limit and the stall detector
    req.stall_timeout = cfg_.stall_timeout;
    auto r = http::stream(req, cb, failure);
    if (!r.ok()) return make_error(r.err().code, redact(r.err().message, cfg_.token));
    const bool aborted = r->stopped;
    return stream_outcome{std::move(r.value()), aborted};
}

result<http_response> http_client::get(const std::string & url) const {
    http::client_request req = request(url, {});
    req.timeout = std::chrono::seconds(cfg_.api_timeout_s);
    req.accept_compressed = true;  // JSON compresses well; file bodies (stream) must stay raw
    auto r = http::call(req);  // bodies over 64 MiB are refused: not a listing we want
    if (!r.ok()) return make_error(r.err().code, redact(r.err().message, cfg_.token));
    return std::move(r.value());
}

result<nlohmann::json> http_client::get_json(const std::string & url, std::string_view what, std::string * next_link) const {
    auto r = get(url);
    if (!r.ok()) return r.err();
    if (!r->ok()) return error_for_status(r.value(), what, cfg_);
    auto j = nlohmann::json::parse(r->body, nullptr, false);
    if (j.is_discarded()) return make_error(errc::unavailable, "the Hub sent invalid JSON for " + std::string(what));
    if (next_link) *next_link = link_next(r->header("Link"));
    return j;
}

std::string link_next(std::string_view header) {
    // Link: <https://hub/api/...?cursor=x>; rel="next", <...>; rel="prev"
    while (!header.empty()) {
        size_t open = header.find('<');
        size_t close = header.find('>', open);
        if (open == std::string_view::npos || close == std::string_view::npos) return {};
        std::string_view target = header.substr(open + 1, close - open - 1);
        size_t end = header.find(',', close);
        std::string_view params = header.substr(close + 1, end == std::string_view::npos ? std::string_view::npos : end - close - 1);
        if (params.find("rel=\"next\"") != std::string_view::npos || params.find("rel=next") != std::string_view::npos)
            return std::string(target);
        if (end == std::string_view::npos) return {};
        header.remove_prefix(end + 1);
    }
    return {};
}

}  // namespace rc::hub
