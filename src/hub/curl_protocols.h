#pragma once
// Limits a libcurl handle, and every redirect it follows, to http and https. libcurl 7.85 named
// these options as strings and deprecated the bitmasks; the release's build root (Debian 11) has
// 7.74, which knows only the bitmasks. A binary built either way runs on both.
#include <curl/curl.h>

namespace rc::hub {

inline void allow_only_http(CURL * c) {
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(c, CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
}

}  // namespace rc::hub
