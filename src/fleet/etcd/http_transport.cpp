#include "fleet/etcd/http_transport.h"

#include <curl/curl.h>

#include <cctype>
#include <memory>
#include <mutex>

#include "hub/curl_protocols.h"

namespace rc::fleet {

namespace {

constexpr size_t max_body = 64u << 20;

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (std::tolower((unsigned char) a[i]) != std::tolower((unsigned char) b[i])) return false;
    return true;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace((unsigned char) s.back())) s.remove_suffix(1);
    while (!s.empty() && std::isspace((unsigned char) s.front())) s.remove_prefix(1);
    return s;
}

void global_init() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct call_state {
    http_reply reply;
    const std::function<bool(std::string_view)> * on_data = nullptr;  // null: buffer the body
    const std::function<bool()> * should_stop = nullptr;
    const std::function<bool(const http_reply &)> * on_head = nullptr;  // null: none
    bool head_seen = false;
    CURL * curl = nullptr;
    bool stopped = false;
    bool too_large = false;
};

size_t on_header(char * data, size_t size, size_t n, void * user) {
    auto * s = static_cast<call_state *>(user);
    std::string_view line(data, size * n);
    if (line.starts_with("HTTP/")) {
        s->reply.headers.clear();
    } else if (auto colon = line.find(':'); colon != std::string_view::npos) {
        s->reply.headers.emplace_back(std::string(trim(line.substr(0, colon))), std::string(trim(line.substr(colon + 1))));
    }
    return size * n;
}

size_t on_write(char * data, size_t size, size_t n, void * user) {
    auto * s = static_cast<call_state *>(user);
    const size_t len = size * n;
    if (s->reply.status == 0) curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &s->reply.status);
    const bool success = s->reply.status >= 200 && s->reply.status < 300;
    if (s->on_data && success) {
        if (s->on_head && !s->head_seen) {
            s->head_seen = true;
            if (!(*s->on_head)(s->reply)) {
                s->stopped = true;
                return 0;
            }
        }
        if (!(*s->on_data)(std::string_view(data, len))) {
            s->stopped = true;
            return 0;
        }
        return len;
    }
    if (s->reply.body.size() + len > max_body) {
        s->too_large = true;
        return 0;
    }
    s->reply.body.append(data, len);
    return len;
}

int on_progress(void * user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    auto * s = static_cast<call_state *>(user);
    if (s->should_stop && *s->should_stop && (*s->should_stop)()) {
        s->stopped = true;
        return 1;
    }
    return 0;
}

result<http_reply> perform(const http_request & req, const std::function<bool(std::string_view)> * on_data,
                           const std::function<bool()> * should_stop, const std::function<bool(const http_reply &)> * on_head = nullptr) {
    global_init();
    std::unique_ptr<CURL, void (*)(CURL *)> curl(curl_easy_init(), curl_easy_cleanup);
    if (!curl) return make_error(errc::internal, "curl_easy_init failed");
    CURL * c = curl.get();
    std::unique_ptr<curl_slist, void (*)(curl_slist *)> list(nullptr, curl_slist_free_all);
    for (const auto & h : req.headers) {
        if (curl_slist * head = curl_slist_append(list.get(), h.c_str())) {
            (void) list.release();
            list.reset(head);
        }
    }
    call_state st;
    st.on_data = on_data;
    st.should_stop = should_stop;
    st.on_head = on_head;
    st.curl = c;
    char errbuf[CURL_ERROR_SIZE] = {0};

    curl_easy_setopt(c, CURLOPT_URL, req.url.c_str());
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req.method.c_str());
    const bool has_body = !req.body.empty() || req.method == "POST" || req.method == "PUT" || req.method == "PATCH";
    if (has_body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, req.body.c_str());
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(req.body.size()));
    } else if (req.method == "HEAD") {
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, list.get());
    curl_easy_setopt(c, CURLOPT_USERAGENT, "rustycage-fleet");
    hub::allow_only_http(c);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, long(req.connect_timeout.count()));
    if (req.timeout.count() > 0) curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, long(req.timeout.count()));
    curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    if (!req.ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, req.ca_file.c_str());
    if (!req.cert_file.empty()) curl_easy_setopt(c, CURLOPT_SSLCERT, req.cert_file.c_str());
    if (!req.key_file.empty()) curl_easy_setopt(c, CURLOPT_SSLKEY, req.key_file.c_str());
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &st);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &st);
    if (should_stop) {
        curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, &st);
    }
    const CURLcode rc = curl_easy_perform(c);
    if (st.reply.status == 0) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st.reply.status);
    if (st.stopped) return std::move(st.reply);
    if (st.too_large) return make_error(errc::unavailable, req.method + " " + req.url + ": response larger than 64 MiB");
    if (rc != CURLE_OK) {
        std::string why = errbuf[0] ? errbuf : curl_easy_strerror(rc);
        return make_error(errc::unavailable, req.method + " " + req.url + " failed: " + why);
    }
    return std::move(st.reply);
}

}  // namespace

std::string http_reply::header(std::string_view name) const {
    for (auto it = headers.rbegin(); it != headers.rend(); ++it)
        if (iequals(it->first, name)) return it->second;
    return {};
}

result<http_reply> http_call(const http_request & req) { return perform(req, nullptr, nullptr); }

result<http_reply> http_stream(const http_request & req, const std::function<bool(std::string_view)> & on_data,
                               const std::function<bool()> & should_stop) {
    return perform(req, &on_data, &should_stop);
}

result<http_reply> http_stream(const http_request & req, const std::function<bool(const http_reply & head)> & on_head,
                               const std::function<bool(std::string_view)> & on_data, const std::function<bool()> & should_stop) {
    return perform(req, &on_data, &should_stop, &on_head);
}

}  // namespace rc::fleet
