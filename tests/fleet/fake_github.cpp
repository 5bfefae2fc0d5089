#include "fake_github.h"

#include <cpp-httplib/httplib.h>

#include <regex>

namespace rc::test {

namespace {

using json = nlohmann::json;

json issue_json(const gh_issue & i, const std::string & base) {
    json labels = json::array();
    for (const auto & l : i.labels) labels.push_back({{"name", l}});
    return {{"number", i.number}, {"title", i.title}, {"body", i.body}, {"state", i.state}, {"labels", labels},
            {"html_url", base + "/issues/" + std::to_string(i.number)}};
}

}  // namespace

fake_github::fake_github() : server_(std::make_unique<httplib::Server>()) {
    for (const char * m : {"GET", "POST", "PATCH"}) {
        const std::string method = m;
        auto h = [this, method](const httplib::Request & req, httplib::Response & res) { handle(method, &req, &res); };
        const std::string pattern = R"(/repos/.*)";
        if (method == "GET") server_->Get(pattern, h);
        else if (method == "POST") server_->Post(pattern, h);
        else server_->Patch(pattern, h);
    }
    port_ = server_->bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    server_->wait_until_ready();
}

fake_github::~fake_github() {
    server_->stop();
    if (thread_.joinable()) thread_.join();
}

void fake_github::fail_next(int n, int status) {
    std::lock_guard<std::mutex> l(mu_);
    fail_n_ = n;
    fail_status_ = status;
}
void fake_github::fail_for(std::chrono::milliseconds d, int status) {
    std::lock_guard<std::mutex> l(mu_);
    fail_until_ = std::chrono::steady_clock::now() + d;
    fail_until_status_ = status;
}
void fake_github::rate_limit_next(int n, int retry_after_s, bool as_403) {
    std::lock_guard<std::mutex> l(mu_);
    limit_n_ = n;
    limit_retry_ = retry_after_s;
    limit_403_ = as_403;
}
void fake_github::rate_limit_reset_next(int n, int64_t reset_epoch_s) {
    std::lock_guard<std::mutex> l(mu_);
    reset_n_ = n;
    reset_epoch_ = reset_epoch_s;
}
void fake_github::delay_writes(std::chrono::milliseconds d) {
    std::lock_guard<std::mutex> l(mu_);
    write_delay_ = d;
}
void fake_github::create_then_fail_next(int n) {
    std::lock_guard<std::mutex> l(mu_);
    create_fail_n_ = n;
}

std::vector<gh_call> fake_github::calls() const {
    std::lock_guard<std::mutex> l(mu_);
    return calls_;
}

std::vector<gh_call> fake_github::calls(const std::string & method, const std::string & suffix) const {
    std::vector<gh_call> out;
    for (const auto & c : calls())
        if (c.method == method && c.path.ends_with(suffix)) out.push_back(c);
    return out;
}

std::vector<gh_issue> fake_github::issues() const {
    std::lock_guard<std::mutex> l(mu_);
    std::vector<gh_issue> out;
    for (const auto & [n, i] : issues_) out.push_back(i);
    return out;
}

void fake_github::close_issue(int64_t number) {
    std::lock_guard<std::mutex> l(mu_);
    issues_[number].state = "closed";
}

void fake_github::reset() {
    std::lock_guard<std::mutex> l(mu_);
    calls_.clear();
    issues_.clear();
    next_number_ = 1;
    fail_n_ = limit_n_ = reset_n_ = create_fail_n_ = 0;
    fail_until_ = {};
    write_delay_ = std::chrono::milliseconds(0);
}

void fake_github::handle(const std::string & method, const void * rq, void * rs) {
    const auto & req = *static_cast<const httplib::Request *>(rq);
    auto & res = *static_cast<httplib::Response *>(rs);
    gh_call call{method, req.path, "", req.get_header_value("Authorization"), 0, std::chrono::steady_clock::now()};
    for (const auto & [k, v] : req.params) call.query += (call.query.empty() ? "" : "&") + k + "=" + v;
    auto answer = [&](int status, const json & body) {
        res.status = status;
        res.set_content(body.dump(), "application/json");
        call.status = status;
        std::lock_guard<std::mutex> l(mu_);
        calls_.push_back(call);
    };

    std::chrono::milliseconds delay{0};
    bool create_fails = false;
    {
        std::unique_lock<std::mutex> l(mu_);
        if (method != "GET") delay = write_delay_;
        if (fail_n_ > 0) {
            --fail_n_;
            const int st = fail_status_;
            l.unlock();
            return answer(st, {{"message", "Server Error"}});
        }
        if (std::chrono::steady_clock::now() < fail_until_) {
            const int st = fail_until_status_;
            l.unlock();
            return answer(st, {{"message", "Server Error"}});
        }
        if (limit_n_ > 0) {
            --limit_n_;
            res.set_header("Retry-After", std::to_string(limit_retry_));
            const int st = limit_403_ ? 403 : 429;
            l.unlock();
            return answer(st, {{"message", "You have exceeded a secondary rate limit"}});
        }
        if (reset_n_ > 0) {
            --reset_n_;
            res.set_header("X-RateLimit-Remaining", "0");
            res.set_header("X-RateLimit-Reset", std::to_string(reset_epoch_));
            l.unlock();
            return answer(403, {{"message", "API rate limit exceeded"}});
        }
        if (method == "POST" && create_fail_n_ > 0) {
            --create_fail_n_;
            create_fails = true;
        }
    }

    static const std::regex issues_re(R"(^/repos/([^/]+)/([^/]+)/issues$)");
    static const std::regex issue_re(R"(^/repos/([^/]+)/([^/]+)/issues/(\d+)$)");
    static const std::regex comments_re(R"(^/repos/([^/]+)/([^/]+)/issues/(\d+)/comments$)");
    std::smatch m;
    const std::string base = "https://github.example/" + std::string(req.path.substr(7, req.path.find("/issues") - 7));
    std::unique_lock<std::mutex> l(mu_);
    if (std::regex_match(req.path, m, issues_re)) {
        if (method == "POST") {
            json b = json::parse(req.body, nullptr, false);
            if (!b.is_object() || !b.contains("title") || !b["title"].is_string() || b["title"].get<std::string>().empty()) {
                l.unlock();
                return answer(422, {{"message", "Validation Failed"}});
            }
            gh_issue i;
            i.number = next_number_++;
            i.title = b["title"];
            i.body = b.value("body", "");
            if (b.contains("labels") && b["labels"].is_array())
                for (const auto & x : b["labels"]) i.labels.push_back(x.get<std::string>());
            issues_[i.number] = i;
            l.unlock();
            if (delay.count() > 0) std::this_thread::sleep_for(delay);  // created; the answer comes late
            if (create_fails) return answer(502, {{"message", "Bad Gateway"}});
            return answer(201, issue_json(i, base));
        }
        // GET: filter by labels and state; paginate with per_page/page and a Link header.
        const std::string label = req.get_param_value("labels");
        const std::string state = req.has_param("state") ? req.get_param_value("state") : "open";
        const size_t per_page = req.has_param("per_page") ? std::stoul(req.get_param_value("per_page")) : 30;
        const size_t page = req.has_param("page") ? std::stoul(req.get_param_value("page")) : 1;
        std::vector<json> all;
        for (const auto & [n, i] : issues_) {
            if (state != "all" && i.state != state) continue;
            if (!label.empty() && std::find(i.labels.begin(), i.labels.end(), label) == i.labels.end()) continue;
            all.push_back(issue_json(i, base));
        }
        json out = json::array();
        for (size_t k = (page - 1) * per_page; k < all.size() && k < page * per_page; ++k) out.push_back(all[k]);
        if (page * per_page < all.size())
            res.set_header("Link", "<" + url() + req.path + "?labels=" + label + "&state=" + state + "&per_page=" + std::to_string(per_page) +
                                       "&page=" + std::to_string(page + 1) + ">; rel=\"next\"");
        l.unlock();
        return answer(200, out);
    }
    if (std::regex_match(req.path, m, issue_re)) {
        auto it = issues_.find(std::stoll(m[3]));
        if (it == issues_.end()) {
            l.unlock();
            return answer(404, {{"message", "Not Found"}});
        }
        if (method == "PATCH") {
            json b = json::parse(req.body, nullptr, false);
            if (b.is_object() && b.contains("state")) it->second.state = b["state"];
        }
        json out = issue_json(it->second, base);
        l.unlock();
        return answer(200, out);
    }
    if (std::regex_match(req.path, m, comments_re)) {
        auto it = issues_.find(std::stoll(m[3]));
        if (it == issues_.end()) {
            l.unlock();
            return answer(404, {{"message", "Not Found"}});
        }
        if (method == "POST") {
            json b = json::parse(req.body, nullptr, false);
            it->second.comments.push_back(b.is_object() ? b.value("body", "") : "");
            const int64_t id = int64_t(it->second.comments.size());
            l.unlock();
            if (delay.count() > 0) std::this_thread::sleep_for(delay);
            if (create_fails) return answer(502, {{"message", "Bad Gateway"}});
            return answer(201, {{"id", id}, {"body", b.value("body", "")}});
        }
        json out = json::array();
        for (size_t k = 0; k < it->second.comments.size(); ++k) out.push_back({{"id", int64_t(k + 1)}, {"body", it->second.comments[k]}});
        l.unlock();
        return answer(200, out);
    }
    l.unlock();
    answer(404, {{"message", "Not Found"}});
}

}  // namespace rc::test
