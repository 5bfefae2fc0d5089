// The agent's watch over its own server (agent.h): what the server's exits and counters make into
// incidents, and the smoke test after a start. A model that fails to load is the server's own
// incident (models/model_manager.cpp writes it to the store's log), which the publisher forwards.
#include "fleet/agent/agent.h"


#include "http/http_client.h"
#include "util/log.h"

namespace rc::fleet {

namespace {

using ojson = nlohmann::ordered_json;
using steady = std::chrono::steady_clock;

ojson tail_json(const std::vector<std::string> & lines) {
    ojson a = ojson::array();
    for (const auto & l : lines) a.push_back(l);
    return a;
}

}  // namespace

void agent::check_server(const server_snapshot & s) {
    if (!s.health.reachable) return;
    const auto now = steady::now();
    if (s.corrupt_blocks > corrupt_seen_) {
        const uint64_t fresh = s.corrupt_blocks - corrupt_seen_;
        corrupt_seen_ = s.corrupt_blocks;
        incidents_->record("kv_corrupt_blocks", "", "", "corrupt KV blocks dropped from the disk tier",
                           {{"error", std::to_string(fresh) + " corrupt block(s) since the last check"}, {"total", s.corrupt_blocks},
                            {"log_tail", tail_json(supervisor_->tail(20))}});
    }
    fivexx_.emplace_back(now, s.responses_5xx);
    while (!fivexx_.empty() && now - fivexx_.front().first > opts_.burst_window) fivexx_.erase(fivexx_.begin());
    const uint64_t in_window = fivexx_.back().second >= fivexx_.front().second ? fivexx_.back().second - fivexx_.front().second : 0;
    if (in_window >= uint64_t(opts_.burst_5xx) && (last_burst_ == steady::time_point{} || now - last_burst_ > opts_.burst_window)) {
        last_burst_ = now;
        ojson routes = ojson::object();
        for (const auto & [route, n] : s.routes_5xx) routes[route] = n;
        incidents_->record("http_5xx_burst", "", "", "burst of 5xx responses",
                           {{"error", std::to_string(in_window) + " 5xx responses within " + std::to_string(opts_.burst_window.count()) + " s"},
                            {"routes", routes}, {"log_tail", tail_json(supervisor_->tail(40))}});
    }
}

void agent::smoke_test(const std::string & url) {
    http::client_request req;
    req.method = "POST";
    req.url = url + "/v1/chat/completions";
    req.headers = {"Content-Type: application/json"};
    if (!opts_.api_key.empty()) req.headers.push_back("Authorization: Bearer " + opts_.api_key);
    req.body = ojson{{"model", opts_.smoke_model}, {"messages", {{{"role", "user"}, {"content", "ping"}}}}, {"max_tokens", 1}}.dump();
    req.timeout = std::chrono::milliseconds(60000);
    auto r = http::call(req);
    std::string why;
    if (!r.ok()) why = r.err().message;
    else if (!r->ok()) why = "HTTP " + std::to_string(r->status) + ": " + r->body.substr(0, 300);
    else {
        auto j = nlohmann::json::parse(r->body, nullptr, false);
        if (!j.is_object() || !j.contains("choices") || !j["choices"].is_array() || j["choices"].empty()) why = "the answer has no choices";
    }
    if (why.empty()) {
        rc::log::info("fleet", "smoke_test_passed", {{"model", opts_.smoke_model}});
        return;
    }
    incidents_->record("smoke_test_failed", opts_.smoke_model, "", why, {{"error", why}, {"log_tail", tail_json(supervisor_->tail(40))}});
}

void agent::on_server_event(const supervisor_event & ev) {
    using k = supervisor_event::kind;
    switch (ev.what) {
        case k::started: {
            std::lock_guard<std::mutex> lock(mu_);
            corrupt_seen_ = 0;
            fivexx_.clear();
            last_snapshot_ = server_snapshot{};
            break;
        }
        case k::ready: smoke_pending_ = !opts_.smoke_model.empty(); break;
        case k::exited:
            if (ev.was_ready && !ev.planned)
                incidents_->record("server_crash", "", "", ev.exit_description,
                                   {{"error", ev.exit_description}, {"uptime_s", ev.uptime.count() / 1000.0}, {"log_tail", tail_json(ev.tail)}});
            break;
        case k::crash_loop: {
            ojson exits = ojson::array();
            for (const auto & e : ev.recent_exits) exits.push_back(e);
            incidents_->record("crash_loop", "", "", "the server exits before it is ready (" + ev.exit_description + ")",
                               {{"error", ev.exit_description}, {"consecutive_failures", ev.consecutive_failures}, {"exits", exits},
                                {"log_tail", tail_json(ev.tail)}});
            break;
        }
        case k::stopped: break;
    }
    republish_ = true;
    cv_.notify_all();
}

}  // namespace rc::fleet
