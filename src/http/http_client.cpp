#include "http/http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <memory>
#include <mutex>

#include "util/ascii.h"

namespace rc::http {

namespace {

constexpr size_t max_body = 64u << 20;       // a buffered body larger than this is not one we want
constexpr size_t max_error_body = 1u << 20;  // enough for any error message a stream relays

// curl_global_init is not thread-safe in every libcurl; do it once, before the first handle.
void global_init() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// The connections kept for calls that reuse them: one libcurl share of its connection cache,
// locked per kind of data it shares (libcurl calls these from any thread).
CURLSH * shared_connections() {
    static std::array<std::mutex, CURL_LOCK_DATA_LAST> locks;
    static CURLSH * share = [] {
        CURLSH * s = curl_share_init();
        if (!s) return s;
        curl_share_setopt(s, CURLSHOPT_LOCKFUNC, +[](CURL *, curl_lock_data d, curl_lock_access, void *) { locks[size_t(d)].lock(); });
        curl_share_setopt(s, CURLSHOPT_UNLOCKFUNC, +[](CURL *, curl_lock_data d, void *) { locks[size_t(d)].unlock(); });
        curl_share_setopt(s, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
        return s;
    }();
    return share;
}

// Only http and https, also for redirects. libcurl 7.85 named these options as strings and
// deprecated the bitmasks; the release's build root (Debian 11) has 7.74, which knows only the
// bitmasks. A binary built either way runs on both.
void allow_only_http(CURL * c) {
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(c, CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
}

// What one transfer shares with curl's callbacks.
struct transfer {
    CURL * curl = nullptr;
    const stream_handlers * handlers = nullptr;  // null: call(), the body buffered
    client_reply reply;
    std::vector<std::pair<std::string, std::string>> receiving;  // headers of the response arriving now
    bool head_done = false;
    bool too_large = false;
    std::chrono::milliseconds stall_timeout{0};
    std::chrono::steady_clock::time_point last_byte = std::chrono::steady_clock::now();
    bool stalled = false;

    void saw_bytes() { last_byte = std::chrono::steady_clock::now(); }
    bool stall_expired() const { return stall_timeout.count() > 0 && std::chrono::steady_clock::now() - last_byte >= stall_timeout; }
    bool should_stop() const { return handlers && handlers->should_stop && handlers->should_stop(); }

    // Fixes the final status and headers once the body starts (curl skips bodies of redirects it follows).
    bool begin_body() {
        if (head_done) return true;
        head_done = true;
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &reply.status);
        reply.headers = std::move(receiving);
        if (handlers && handlers->on_head && !handlers->on_head(reply)) reply.stopped = true;
        return !reply.stopped;
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

// Any count other than `size * n` makes curl stop with CURLE_WRITE_ERROR.
size_t on_write(char * data, size_t size, size_t n, void * user) {
    auto * t = static_cast<transfer *>(user);
    const size_t len = size * n;
    t->saw_bytes();
    if (!t->begin_body()) return 0;
    if (t->should_stop()) {
        t->reply.stopped = true;
        return 0;
    }
    if (t->handlers && t->reply.ok()) {
        if (t->handlers->on_data && !t->handlers->on_data(std::string_view(data, len))) {
            t->reply.stopped = true;
            return 0;
        }
        return len;
    }
    const size_t limit = t->handlers ? max_error_body : max_body;
    if (t->reply.body.size() + len > limit) {
        if (t->handlers) {  // an error body is for a message: keep its start
            t->reply.body.append(data, limit - t->reply.body.size());
            return len;
        }
        t->too_large = true;
        return 0;
    }
    t->reply.body.append(data, len);
    return len;
}

// libcurl calls this at least once a second, also while no data flows.
int on_progress(void * user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    auto * t = static_cast<transfer *>(user);
    if (t->should_stop()) {
        t->reply.stopped = true;
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

struct easy_deleter {
    void operator()(CURL * c) const { curl_easy_cleanup(c); }
};
struct slist_deleter {
    void operator()(curl_slist * l) const { curl_slist_free_all(l); }
};

void set_options(CURL * c, const client_request & req, curl_slist * headers, transfer & t, char * errbuf) {
    curl_easy_setopt(c, CURLOPT_URL, req.url.c_str());
    if (req.method == "GET") {
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    } else {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req.method.c_str());
        if (req.method == "HEAD") curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    }
    if (!req.body.empty() || req.method == "POST" || req.method == "PUT" || req.method == "PATCH") {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, req.body.c_str());
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(req.body.size()));
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_USERAGENT, req.user_agent.c_str());
    if (req.follow_redirects) {
        curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
        curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
    }
    allow_only_http(c);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // we run on many threads; signals would be process-wide
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, long(req.connect_timeout.count()));
    if (req.timeout.count() > 0) curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, long(req.timeout.count()));
    if (req.low_speed_bytes > 0 && req.low_speed_time.count() > 0) {
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, req.low_speed_bytes);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, long(req.low_speed_time.count()));
    }
    curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    if (req.reuse_connection) {
        if (CURLSH * share = shared_connections()) {
            curl_easy_setopt(c, CURLOPT_SHARE, share);
            curl_easy_setopt(c, CURLOPT_MAXCONNECTS, 256L);  // the pool, not one host's: a fleet of 64 hosts
        }
    }
    if (req.accept_compressed) curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
    if (!req.ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, req.ca_file.c_str());
    if (!req.cert_file.empty()) curl_easy_setopt(c, CURLOPT_SSLCERT, req.cert_file.c_str());
    if (!req.key_file.empty()) curl_easy_setopt(c, CURLOPT_SSLKEY, req.key_file.c_str());
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
    if (t.handlers || t.stall_timeout.count() > 0) {
        curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, &t);
    }
}

result<client_reply> perform(const client_request & req, const stream_handlers * handlers, transport_failure * failure) {
    if (failure) *failure = transport_failure::none;
    global_init();
    std::unique_ptr<CURL, easy_deleter> curl(curl_easy_init());
    if (!curl) return make_error(errc::internal, "curl_easy_init failed");
    std::unique_ptr<curl_slist, slist_deleter> list;
    for (const auto & h : req.headers) {
        // Appending returns the same head, or a new one for the first entry; null only when out of memory.
        if (curl_slist * head = curl_slist_append(list.get(), h.c_str())) {
            (void) list.release();
            list.reset(head);
        }
    }
    transfer t;
    t.curl = curl.get();
    t.handlers = handlers;
    t.stall_timeout = req.stall_timeout;
    char errbuf[CURL_ERROR_SIZE] = {0};
    set_options(curl.get(), req, list.get(), t, errbuf);

    const CURLcode rc = curl_easy_perform(curl.get());
    if (rc == CURLE_OK) t.begin_body();  // an empty body never reached on_write
    if (t.reply.status == 0) curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &t.reply.status);
    if (t.reply.stopped) return std::move(t.reply);
    const std::string what = req.method + " " + req.url;
    if (t.stalled) {
        if (failure) *failure = transport_failure::stalled;
        char buf[64];
        std::snprintf(buf, sizeof buf, "no data for %g s", std::chrono::duration<double>(req.stall_timeout).count());
        return make_error(errc::unavailable, what + " failed: " + buf);
    }
    if (t.too_large) {
        if (failure) *failure = transport_failure::other;
        return make_error(errc::unavailable, what + ": response larger than 64 MiB");
    }
    if (rc != CURLE_OK) {
        if (failure) *failure = classify(rc);
        return make_error(errc::unavailable, what + " failed: " + (errbuf[0] ? errbuf : curl_easy_strerror(rc)));
    }
    return std::move(t.reply);
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

std::string client_reply::header(std::string_view name) const {
    for (auto it = headers.rbegin(); it != headers.rend(); ++it)
        if (iequals(it->first, name)) return it->second;
    return {};
}

result<client_reply> call(const client_request & req, transport_failure * failure) { return perform(req, nullptr, failure); }

result<client_reply> stream(const client_request & req, const stream_handlers & handlers, transport_failure * failure) {
    return perform(req, &handlers, failure);
}

std::string url_encode(std::string_view s) {
    static const char * hex = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : s) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
            out += static_cast<char>(c);
        } else {
            out += '%';
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    return out;
}

}  // namespace rc::http
