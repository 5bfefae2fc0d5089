#pragma once
// The fleet's door to GitHub's REST API (issues and their comments) — only what filing incidents
// needs. github_rest_client speaks it over http/http_client.h; tests/fleet have an in-memory fake.
//
// Contract:
// * Every call returns a gh_status: ok, or why not and whether to retry (5xx, transport failures and
//   rate limits are retryable; 401/404/422 are not). Rate limits (429, or 403 with Retry-After or
//   X-RateLimit-Remaining: 0) carry retry_after from Retry-After or X-RateLimit-Reset.
// * The token (GITHUB_TOKEN) goes only into the Authorization header; it is never logged and is
//   redacted from every message built here. The base URL comes from GITHUB_API_URL
//   (default https://api.github.com), so GitHub Enterprise and test servers work.
// * Thread-safe (stateless besides its configuration).
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rc::fleet {

struct github_issue {
    int64_t number = 0;
    std::string url;    // html_url
    std::string state;  // open | closed
    std::string title, body;
};

struct github_comment {
    int64_t id = 0;
    std::string body;
};

struct gh_status {
    bool ok = true;
    bool retryable = false;
    std::chrono::seconds retry_after{0};  // > 0 for rate limits
    long http_status = 0;
    std::string message;

    static gh_status success() { return {}; }
};

class github_client {
  public:
    virtual ~github_client() = default;
    virtual gh_status create_issue(const std::string & title, const std::string & body, const std::vector<std::string> & labels,
                                   github_issue & out) = 0;
    virtual gh_status get_issue(int64_t number, github_issue & out) = 0;
    // The issue carrying `label` whose body contains `marker` — the newest open one, else the newest
    // closed one — or nullopt.
    virtual gh_status find_issue(const std::string & label, const std::string & marker, std::optional<github_issue> & out) = 0;
    virtual gh_status list_comments(int64_t number, std::vector<github_comment> & out) = 0;
    virtual gh_status add_comment(int64_t number, const std::string & body, github_comment & out) = 0;
    virtual gh_status set_state(int64_t number, const std::string & state) = 0;
};

struct github_options {
    std::string api_url = "https://api.github.com";
    std::string repo;   // owner/name
    std::string token;
    std::chrono::milliseconds timeout{15000};
};

// Fills api_url and token from GITHUB_API_URL / GITHUB_TOKEN when set.
github_options github_options_from_env(std::string repo);
// owner/name with GitHub's characters.
bool valid_github_repo(const std::string & repo);

class github_rest_client final : public github_client {
  public:
    explicit github_rest_client(github_options opts);
    gh_status create_issue(const std::string & title, const std::string & body, const std::vector<std::string> & labels, github_issue & out) override;
    gh_status get_issue(int64_t number, github_issue & out) override;
    gh_status find_issue(const std::string & label, const std::string & marker, std::optional<github_issue> & out) override;
    gh_status list_comments(int64_t number, std::vector<github_comment> & out) override;
    gh_status add_comment(int64_t number, const std::string & body, github_comment & out) override;
    gh_status set_state(int64_t number, const std::string & state) override;

  private:
    struct answer {
        gh_status status;
        std::string body;
        std::string next;  // Link rel="next"
    };
    answer send(const std::string & method, const std::string & url, const std::string & body) const;
    std::string repo_url() const;
    github_options opts_;
};

// The delay a rate-limited answer asks for: Retry-After seconds, else X-RateLimit-Reset (epoch s) − now.
std::chrono::seconds github_retry_after(const std::string & retry_after, const std::string & reset_epoch, const std::string & remaining,
                                        std::chrono::system_clock::time_point now);

}  // namespace rc::fleet
