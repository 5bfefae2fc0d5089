#include "fleet/incidents/github_client.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <regex>

#include "http/http_client.h"
#include "hub/http_client.h"  // link_next: GitHub paginates with the same RFC 8288 Link header as the Hub

namespace rc::fleet {

namespace {

using json = nlohmann::json;

std::string redact(std::string text, const std::string & token) {
    if (token.empty()) return text;
    for (size_t pos; (pos = text.find(token)) != std::string::npos;) text.replace(pos, token.size(), "[redacted]");
    return text;
}

github_issue parse_issue(const json & j) {
    github_issue i;
    i.number = j.value("number", int64_t(0));
    i.url = j.value("html_url", "");
    i.state = j.value("state", "");
    i.title = j.value("title", "");
    if (j.contains("body") && j["body"].is_string()) i.body = j["body"].get<std::string>();
    return i;
}

int64_t parse_int(const std::string & s) {
    if (s.empty()) return -1;
    char * end = nullptr;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    return end && *end == '\0' ? v : -1;
}

}  // namespace

std::chrono::seconds github_retry_after(const std::string & retry_after, const std::string & reset_epoch, const std::string & remaining,
                                        std::chrono::system_clock::time_point now) {
    if (int64_t s = parse_int(retry_after); s >= 0) return std::chrono::seconds(s);
    if (remaining == "0") {
        if (int64_t reset = parse_int(reset_epoch); reset > 0) {
            const int64_t now_s = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
            return std::chrono::seconds(std::max<int64_t>(reset - now_s, 1));
        }
    }
    return std::chrono::seconds(0);
}

github_options github_options_from_env(std::string repo) {
    github_options o;
    o.repo = std::move(repo);
    if (const char * u = std::getenv("GITHUB_API_URL"); u && *u) o.api_url = u;
    while (!o.api_url.empty() && o.api_url.back() == '/') o.api_url.pop_back();
    if (const char * t = std::getenv("GITHUB_TOKEN"); t && *t) o.token = t;
    return o;
}

bool valid_github_repo(const std::string & repo) {
    static const std::regex re(R"(^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$)");
    return std::regex_match(repo, re);
}

github_rest_client::github_rest_client(github_options opts) : opts_(std::move(opts)) {}

std::string github_rest_client::repo_url() const { return opts_.api_url + "/repos/" + opts_.repo; }

github_rest_client::answer github_rest_client::send(const std::string & method, const std::string & url, const std::string & body) const {
    http::client_request req;
    req.method = method;
    req.url = url;
    req.headers = {"Accept: application/vnd.github+json", "X-GitHub-Api-Version: 2022-11-28", "Content-Type: application/json"};
    if (!opts_.token.empty()) req.headers.push_back("Authorization: Bearer " + opts_.token);
    req.body = body;
    req.timeout = opts_.timeout;
    req.connect_timeout = std::chrono::milliseconds(5000);
    answer a;
    auto r = http::call(req);
    if (!r.ok()) {
        a.status = {false, true, std::chrono::seconds(0), 0, redact(r.err().message, opts_.token)};
        return a;
    }
    a.status.http_status = r->status;
    a.body = r->body;
    a.next = hub::link_next(r->header("Link"));
    if (r->ok()) return a;
    a.status.ok = false;
    std::string why;
    if (auto j = json::parse(r->body, nullptr, false); j.is_object()) why = j.value("message", "");
    a.status.message = redact("GitHub " + method + " " + url + " answered " + std::to_string(r->status) + (why.empty() ? "" : ": " + why), opts_.token);
    const auto wait = github_retry_after(r->header("Retry-After"), r->header("X-RateLimit-Reset"), r->header("X-RateLimit-Remaining"),
                                         std::chrono::system_clock::now());
    const bool rate_limited = r->status == 429 || (r->status == 403 && (wait.count() > 0 || r->header("X-RateLimit-Remaining") == "0"));
    if (rate_limited) {
        a.status.retryable = true;
        a.status.retry_after = wait.count() > 0 ? wait : std::chrono::seconds(60);
    } else {
        a.status.retryable = r->status >= 500 || r->status == 408;
    }
    return a;
}

gh_status github_rest_client::create_issue(const std::string & title, const std::string & body, const std::vector<std::string> & labels,
                                           github_issue & out) {
    auto a = send("POST", repo_url() + "/issues", json{{"title", title}, {"body", body}, {"labels", labels}}.dump());
    if (!a.status.ok) return a.status;
    auto j = json::parse(a.body, nullptr, false);
    if (!j.is_object() || !j.contains("number")) return {false, true, std::chrono::seconds(0), a.status.http_status, "GitHub answered no issue number"};
    out = parse_issue(j);
    return a.status;
}

gh_status github_rest_client::get_issue(int64_t number, github_issue & out) {
    auto a = send("GET", repo_url() + "/issues/" + std::to_string(number), "");
    if (!a.status.ok) return a.status;
    auto j = json::parse(a.body, nullptr, false);
    if (!j.is_object()) return {false, true, std::chrono::seconds(0), a.status.http_status, "GitHub answered an issue that is not JSON"};
    out = parse_issue(j);
    return a.status;
}

gh_status github_rest_client::find_issue(const std::string & label, const std::string & marker, std::optional<github_issue> & out) {
    // Listing by label is consistent at once; the search API lags behind new issues, which is the very
    // window (created, not yet recorded) this lookup must cover.
    out.reset();
    std::string url = repo_url() + "/issues?state=all&per_page=100&sort=created&direction=asc&labels=" + label;
    for (int page = 0; !url.empty() && page < 50; ++page) {
        auto a = send("GET", url, "");
        if (!a.status.ok) return a.status;
        auto j = json::parse(a.body, nullptr, false);
        if (!j.is_array()) return {false, true, std::chrono::seconds(0), a.status.http_status, "GitHub answered an issue list that is not JSON"};
        for (const auto & i : j) {
            if (!i.is_object() || i.contains("pull_request")) continue;
            github_issue issue = parse_issue(i);
            if (issue.body.find(marker) == std::string::npos) continue;
            const bool better = !out || (issue.state == "open" && out->state != "open") ||
                                (issue.state == out->state && issue.number > out->number);
            if (better) out = issue;
        }
        url = a.next;
    }
    return gh_status::success();
}

gh_status github_rest_client::list_comments(int64_t number, std::vector<github_comment> & out) {
    out.clear();
    std::string url = repo_url() + "/issues/" + std::to_string(number) + "/comments?per_page=100";
    for (int page = 0; !url.empty() && page < 50; ++page) {
        auto a = send("GET", url, "");
        if (!a.status.ok) return a.status;
        auto j = json::parse(a.body, nullptr, false);
        if (!j.is_array()) return {false, true, std::chrono::seconds(0), a.status.http_status, "GitHub answered a comment list that is not JSON"};
        for (const auto & c : j)
            if (c.is_object()) out.push_back({c.value("id", int64_t(0)), c.contains("body") && c["body"].is_string() ? c["body"].get<std::string>() : ""});
        url = a.next;
    }
    return gh_status::success();
}

gh_status github_rest_client::add_comment(int64_t number, const std::string & body, github_comment & out) {
    auto a = send("POST", repo_url() + "/issues/" + std::to_string(number) + "/comments", json{{"body", body}}.dump());
    if (!a.status.ok) return a.status;
    auto j = json::parse(a.body, nullptr, false);
    out.id = j.is_object() ? j.value("id", int64_t(0)) : 0;
    out.body = body;
    return a.status;
}

gh_status github_rest_client::set_state(int64_t number, const std::string & state) {
    return send("PATCH", repo_url() + "/issues/" + std::to_string(number), json{{"state", state}}.dump()).status;
}

}  // namespace rc::fleet
