#include "hub/http_client.h"

#include <curl/curl.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>

#include "hub/curl_protocols.h"
#include "hub/hub_errors.h"

namespace rc::hub {

namespace {

constexpr size_t max_api_body = 64u << 20;    // a JSON listing larger than this is not one we want
constexpr size_t max_error_body = 64u << 10;  // enough for any error message

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (std::tolower((unsigned char) a[i]) != std::tolower((unsigned char) b[i])) return false;
    return true;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) s.remove_suffix(1);
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    return s;
}

// curl_global_init is not thread-safe in every libcurl; do it once, before the first handle.
void global_init() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct easy_deleter {
    void operator()(CURL * c) const { curl_easy_cleanup(c); }
};
struct slist_deleter {
    void operator()(curl_slist * l) const { curl_slist_free_all(l); }
};

// State one transfer shares with curl's callbacks.
struct transfer {
    CURL * curl = nullptr;
    const stream_callbacks * cb = nullptr;
    http_response head;
    std::vector<std::pair<std::string, std::string>> receiving;  // headers of the response arriving now
    bool head_done = false;
    bool aborted = false;
    // The stall detector: the last time any byte (header or body) arrived; zero timeout: off.
    std::chrono::milliseconds stall_timeout{0};
    std::chrono::steady_clock::time_point last_byte = std::chrono::steady_clock::now();
    bool stalled = false;

    void saw_bytes() { last_byte = std::chrono::steady_clock::now(); }
    bool stall_expired() const { return stall_timeout.count() > 0 && std::chrono::steady_clock::now() - last_byte >= stall_timeout; }

    // Fixes the final status and headers once the body starts (curl skips bodies of redirects it follows).
    bool begin_body() {
        if (head_done) return true;
        head_done = true;
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &head.status);
        head.headers = std::move(receiving);
        if (cb->on_head && !cb->on_head(head)) aborted = true;
        return !aborted;
    }
};

size_t on_header(char * data, size_t size, size_t n, void * user) {
    auto * t = static_cast<transfer *>(user);
    t->saw_bytes();
    std::string_view line(data, size * n);
    if (line.starts_with("HTTP/")) {
        t->receiving.clear();  // a new response (1xx, a redirect, or the final one) starts
    } else if (auto colon = line.find(':'); colon != std::string_view::npos) {
        t->receiving.emplace_back(std::string(trim(line.substr(0, colon))), std::string(trim(line.substr(colon + 1))));
    }
    return size * n;
}

size_t on_write(char * data, size_t size, size_t n, void * user) {
    auto * t = static_cast<transfer *>(user);
    const size_t len = size * n;
    t->saw_bytes();
    if (!t->begin_body()) return 0;  // any count other than len makes curl stop with CURLE_WRITE_ERROR
    if (t->cb->should_abort && t->cb->should_abort()) {
        t->aborted = true;
        return 0;
    }
    if (t->head.is_success()) {
        if (t->cb->on_body && !t->cb->on_body(data, len)) {
            t->aborted = true;
            return 0;
        }
    } else if (t->head.body.size() < max_error_body) {
        t->head.body.append(data, std::min(len, max_error_body - t->head.body.size()));
    }
    return len;
}

// libcurl calls this at least once a second, also while no data flows.
int on_progress(void * user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    auto * t = static_cast<transfer *>(user);
    if (t->cb->should_abort && t->cb->should_abort()) {
        t->aborted = true;
        return 1;
    }
    if (t->stall_expired()) {
        t->stalled = true;
        return 1;
    }
    return 0;
}

transport_failure classify(CURLcode rc) {
    switch (rc) {
        case CURLE_COULDNT_CONNECT:
        case CURLE_SSL_CONNECT_ERROR: return transport_failure::connect;
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_RESOLVE_PROXY: return transport_failure::resolve;
        case CURLE_OPERATION_TIMEDOUT: return transport_failure::timed_out;
        case CURLE_RECV_ERROR:
        case CURLE_SEND_ERROR:
        case CURLE_GOT_NOTHING:
        case CURLE_HTTP2:
        case CURLE_HTTP2_STREAM: return transport_failure::reset;
        case CURLE_PARTIAL_FILE: return transport_failure::cut_short;
        default: return transport_failure::other;
    }
}

}  // namespace

const char * describe(transport_failure f) {
    switch (f) {
        case transport_failure::none: return "no failure";
        case transport_failure::connect: return "cannot connect";
        case transport_failure::resolve: return "host name not resolved";
        case transport_failure::timed_out: return "timed out";
        case transport_failure::reset: return "connection reset";
        case transport_failure::cut_short: return "connection closed early";
        case transport_failure::stalled: return "stalled";
        case transport_failure::other: break;
    }
    return "transfer failed";
}

bool is_retryable(transport_failure f) { return f != transport_failure::none && f != transport_failure::other; }

std::string http_response::header(std::string_view name) const {
    for (auto it = headers.rbegin(); it != headers.rend(); ++it)
        if (iequals(it->first, name)) return it->second;
    return {};
}

http_client::http_client(hub_config cfg) : cfg_(std::move(cfg)) { global_init(); }

result<stream_outcome> http_client::perform(const std::string & url, const std::vector<std::string> & headers,
                                            const stream_callbacks & cb, bool api_call, transport_failure * failure) const {
    if (failure) *failure = transport_failure::none;
    std::unique_ptr<CURL, easy_deleter> curl(curl_easy_init());
    if (!curl) return make_error(errc::internal, "curl_easy_init failed");
    CURL * c = curl.get();

    std::unique_ptr<curl_slist, slist_deleter> list;
    auto add = [&](const std::string & h) {
        // Appending returns the same head, or a new one for the first entry; null only when out of memory.
        if (curl_slist * head = curl_slist_append(list.get(), h.c_str())) {
            (void) list.release();
            list.reset(head);
        }
    };
    if (cfg_.has_token()) add("Authorization: Bearer " + cfg_.token);
    for (const auto & h : headers) add(h);

    transfer t;
    t.curl = c;
    t.cb = &cb;
    if (!api_call) t.stall_timeout = cfg_.stall_timeout;  // the JSON calls have their overall timeout
    char errbuf[CURL_ERROR_SIZE] = {0};

    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, list.get());
    curl_easy_setopt(c, CURLOPT_USERAGENT, cfg_.user_agent.c_str());
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
    allow_only_http(c);  // never let a redirect take us (or the Range header) anywhere but http(s)
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // we run on many threads; signals would be process-wide
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, cfg_.connect_timeout_s);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, cfg_.low_speed_bytes);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, cfg_.low_speed_time_s);
    curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    if (api_call) {
        curl_easy_setopt(c, CURLOPT_TIMEOUT, cfg_.api_timeout_s);
        curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");  // JSON compresses well; file bodies must stay raw
    }
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &t);

    CURLcode rc = curl_easy_perform(c);
    if (rc == CURLE_OK) t.begin_body();  // an empty body never reached on_write
    if (t.aborted) return stream_outcome{std::move(t.head), true};
    if (t.stalled) {
        if (failure) *failure = transport_failure::stalled;
        const auto secs = std::chrono::duration<double>(cfg_.stall_timeout).count();
        char buf[64];
        std::snprintf(buf, sizeof buf, "no data for %g s", secs);
        return make_error(errc::unavailable, redact("GET " + url + " failed: " + buf, cfg_.token));
    }
    if (rc != CURLE_OK) {
        if (failure) *failure = classify(rc);
        std::string why = errbuf[0] ? errbuf : curl_easy_strerror(rc);
        return make_error(errc::unavailable, redact("GET " + url + " failed: " + why, cfg_.token));
    }
    return stream_outcome{std::move(t.head), false};
}

result<stream_outcome> http_client::stream(const std::string & url, const std::vector<std::string> & headers,
                                           const stream_callbacks & cb, transport_failure * failure) const {
    return perform(url, headers, cb, false, failure);
}

result<http_response> http_client::get(const std::string & url) const {
    std::string body;
    bool too_large = false;
    stream_callbacks cb;
    cb.on_body = [&](const char * data, size_t n) {
        if (body.size() + n > max_api_body) return !(too_large = true);
        body.append(data, n);
        return true;
    };
    auto out = perform(url, {}, cb, true, nullptr);
    if (!out.ok()) return out.err();
    if (too_large) return make_error(errc::unavailable, "GET " + url + ": response larger than 64 MiB");
    http_response r = std::move(out->head);
    if (r.is_success()) r.body = std::move(body);
    return r;
}

result<nlohmann::json> http_client::get_json(const std::string & url, std::string_view what, std::string * next_link) const {
    auto r = get(url);
    if (!r.ok()) return r.err();
    if (!r->is_success()) return error_for_status(r.value(), what, cfg_);
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
