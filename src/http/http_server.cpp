#include "http/http_server.h"

#include <cpp-httplib/httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <limits>
#include <mutex>

#include "http/connection_pool.h"
#include "http/http_connection.h"
#include "util/ascii.h"

namespace rc::http {

namespace {

// httplib's server with our connection loop (http/http_connection.h): a read buffer that lives as
// long as the connection (pipelined requests are all answered, in order), a deadline on each
// header block, and a cap on open connections. httplib still parses and routes every request.
class guarded_server final : public httplib::Server {
  public:
    explicit guarded_server(const http_server_options & o) : o_(o) {}

    // A drain: connections from now on are answered 503, idle ones close, and the requests already
    // taken run to their end (httplib's own stop would skip the body of a streamed response not yet
    // started: it stops calling content providers once its socket is gone).
    void begin_drain() {
        std::lock_guard lock(drain_mu_);
        draining_ = true;
    }
    void wait_drained() {
        std::unique_lock lock(drain_mu_);
        drained_.wait(lock, [this] { return serving_ == 0; });
    }

  private:
    bool process_and_close_socket(socket_t sock) override;
    // Answers `status` (with the API's error body for the request line seen, if any) and closes.
    void refuse(detail::connection_stream & strm, int status);
    bool enter() {  // false once draining: the connection is refused
        std::lock_guard lock(drain_mu_);
        if (draining_) return false;
        ++serving_;
        return true;
    }
    void leave() {
        std::lock_guard lock(drain_mu_);
        if (--serving_ == 0) drained_.notify_all();
    }

    const http_server_options & o_;
    std::atomic<int> open_{0};
    std::atomic<int> refusing_{0};  // connections over the cap being answered 503
    std::mutex drain_mu_;
    std::condition_variable drained_;
    std::atomic<bool> draining_{false};
    int serving_ = 0;  // connections that may still serve a request
};

}  // namespace

struct http_server::impl {
    http_server_options opts;
    guarded_server server{opts};
    std::map<std::string, std::string> route_of_pattern;  // httplib's pattern → ours (they differ for "*")
};

namespace {

// The connection this thread serves (a connection keeps its thread while it is open): requests
// converted on it ask it whether their client is still there.
thread_local std::shared_ptr<detail::client_presence> t_presence;

http_request convert(const httplib::Request & req, bool with_body = true) {
    http_request r;
    r.method = req.method;
    r.path = req.path;
    if (with_body) r.body = req.body;
    r.remote_addr = req.remote_addr;
    for (const auto & [k, v] : req.path_params) r.path_params[k] = v;
    for (const auto & [k, v] : req.params) r.query.emplace(k, v);
    for (const auto & [k, v] : req.headers) r.headers[ascii_lower(k)] = v;
    if (auto presence = t_presence) r.client_gone = [presence] { return presence->gone(); };
    else r.client_gone = req.is_connection_closed;
    return r;
}

double ms_since_arrival(const httplib::Request & req) {
    auto now = std::chrono::steady_clock::now();
    auto start = req.start_time_ == std::chrono::steady_clock::time_point::min() ? now : req.start_time_;
    return std::chrono::duration<double, std::milli>(now - start).count();
}

// Reports a streamed response once: when its stream function returns, or, if the stream never ran
// (HEAD, client gone before the headers), when httplib drops the response.
class stream_completion {
  public:
    stream_completion(const http_server_options & o, http_request req, int status, const httplib::Request & raw)
        : o_(o), req_(std::move(req)), status_(status), raw_(raw) {}
    ~stream_completion() { report(); }
    void report() {
        if (reported_ || !o_.on_complete) return;
        reported_ = true;
        o_.on_complete(req_, status_, ms_since_arrival(raw_));
    }

  private:
    const http_server_options & o_;
    http_request req_;
    int status_;
    const httplib::Request & raw_;  // lives until the response is written and dropped
    bool reported_ = false;
};

// Whether a body follows the header (so not answering it means closing the connection).
bool has_request_body(const httplib::Request & req) {
    return req.get_header_value_u64("Content-Length") > 0 || req.has_header("Transfer-Encoding");
}

// RFC 9112 §6.3: Content-Length is 1*DIGIT (leading zeros included), one value, however many times
// the field is repeated. Anything else ("+5", "5, 5", " 5x", 20 digits) is a framing error, never
// guessed at.
bool content_length_is_strict(const httplib::Request & req) {
    auto [first, last] = req.headers.equal_range("Content-Length");
    for (auto it = first; it != last; ++it) {
        const std::string & v = it->second;
        if (v.empty() || v.size() > 18 || v.find_first_not_of("0123456789") != std::string::npos) return false;
        if (it != first && std::stoull(v) != std::stoull(first->second)) return false;
    }
    return true;
}

void apply(const http_response & in, httplib::Response & out) {
    out.status = in.status;
    for (const auto & [k, v] : in.headers) out.set_header(k, v);
    if (in.stream) {
        auto fn = in.stream;
        out.set_chunked_content_provider(in.content_type, [fn](size_t, httplib::DataSink & sink) {
            stream_sink s;
            s.write = [&sink](std::string_view chunk) { return sink.is_writable() && sink.write(chunk.data(), chunk.size()); };
            s.alive = [&sink] { return sink.is_writable(); };
            fn(s);
            sink.done();
            return true;
        });
    } else {
        out.set_content(in.body, in.content_type);
    }
}

const char * reason_phrase(int status) {
    switch (status) {
        case 408: return "Request Timeout";
        case 431: return "Request Header Fields Too Large";
        case 503: return "Service Unavailable";
        default: return "Error";
    }
}

// Threads beyond max_connections, so that connections over the cap still find one to be refused on;
// of those refusals, how many may wait up to a second for the request line (to answer in its dialect).
constexpr int k_refusal_threads = 16;
constexpr int k_refusals_that_wait = 8;

// One more in `c` while it lives; `now` is the count with it.
struct counted {
    std::atomic<int> & n;
    int now;
    explicit counted(std::atomic<int> & c) : n(c), now(++c) {}
    ~counted() { --n; }
};

bool guarded_server::process_and_close_socket(socket_t sock) {
    const counted slot(open_);
    detail::connection_stream strm(sock, o_.read_timeout, o_.write_timeout);
    auto stopping = [this] { return draining_.load() || svr_sock_ == INVALID_SOCKET; };
    if (slot.now > o_.max_connections || !enter()) {
        // Wait briefly for the request line so the 503 can speak the client's dialect — while few
        // refusals wait so. Beyond that (300 idle connections on a cap of 64) the 503 goes at once:
        // a refusal must never hold a thread that the next refusal needs.
        const counted refusal(refusing_);
        if (refusal.now <= k_refusals_that_wait)
            strm.read_header(std::chrono::steady_clock::now() + std::min(o_.header_timeout, std::chrono::milliseconds(1000)), o_.max_header_bytes, stopping);
        refuse(strm, 503);
        return true;
    }
    struct leaving {
        guarded_server & s;
        ~leaving() { s.leave(); }
    } on_leave{*this};
    std::string remote_addr, local_addr;
    int remote_port = 0, local_port = 0;
    strm.get_remote_ip_and_port(remote_addr, remote_port);
    strm.get_local_ip_and_port(local_addr, local_port);
    auto presence = std::make_shared<detail::client_presence>(sock);
    t_presence = presence;
    struct forget {
        ~forget() { t_presence.reset(); }
    } on_exit;
    bool ret = true;
    for (size_t left = keep_alive_max_count_; left > 0; --left) {
        // A connection's first request, sent before a shutdown, is answered; later ones are not waited for.
        if (!strm.wait_for_request(o_.keep_alive_idle, stopping, left == keep_alive_max_count_)) break;
        auto state = strm.read_header(std::chrono::steady_clock::now() + o_.header_timeout, o_.max_header_bytes, stopping);
        if (state == detail::connection_stream::header_state::closed) break;
        if (state != detail::connection_stream::header_state::complete) {
            refuse(strm, state == detail::connection_stream::header_state::timed_out ? 408 : 431);
            return true;
        }
        bool connection_closed = false;
        // httplib calls this only for a request whose line and headers parsed. One that did not got
        // a 400, and the bytes after it cannot be trusted to start a request (behind a proxy that
        // would be request smuggling): the connection closes.
        bool framed = false;
        const std::function<void(httplib::Request &)> on_framed = [&](httplib::Request & req) {
            framed = true;
            presence->begin_request(req.version == "HTTP/1.1");
        };
        ret = serve_guarded([&] {
            return process_request(strm, remote_addr, remote_port, local_addr, local_port, left == 1, connection_closed, on_framed);
        });
        if (!ret || connection_closed || !framed || presence->closing()) break;
    }
    strm.close_gracefully();
    return ret;
}

void guarded_server::refuse(detail::connection_stream & strm, int status) {
    http_request req;
    strm.peek_request_line(req.method, req.path);
    http_response body;
    body.status = status;
    body.content_type = "text/plain";
    body.body = reason_phrase(status);
    if (o_.on_status) body = o_.on_status(req, status);
    std::string out = "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) + "\r\n";
    out += "Content-Type: " + body.content_type + "\r\nContent-Length: " + std::to_string(body.body.size()) + "\r\nConnection: close\r\n";
    bool has_retry_after = false;
    for (const auto & [k, v] : body.headers) {
        has_retry_after = has_retry_after || k == "Retry-After";
        out += k + ": " + v + "\r\n";
    }
    if (status == 503 && !has_retry_after) out += "Retry-After: 1\r\n";
    out += "\r\n" + body.body;
    strm.write_all(out);
    if (o_.on_complete) o_.on_complete(req, status, 0);
    strm.close_gracefully();
}

// SO_REUSEADDR only (a restart may bind while old connections linger in TIME_WAIT). httplib's
// default adds SO_REUSEPORT, which lets a second process bind the same port and take half of the
// connections.
void exclusive_socket_options(socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
}

}  // namespace

http_server::http_server(std::vector<route> routes, http_server_options opts) : impl_(std::make_unique<impl>()) {
    impl_->opts = std::move(opts);
    auto & srv = impl_->server;
    auto * o = &impl_->opts;
    const size_t max_threads = static_cast<size_t>(std::max(1, o->max_connections) + k_refusal_threads);
    // Each connection holds a thread, started the moment it is needed (connection_pool.h).
    srv.new_task_queue = [max_threads] { return new detail::connection_pool(16, max_threads); };
    srv.set_socket_options(exclusive_socket_options);
    srv.set_keep_alive_max_count(1000);

    // Every body is read through a content reader so that the size limit is ours to apply: JSON
    // routes buffer up to max_body_bytes (413 beyond), upload routes stream without a limit.
    // httplib's own limit is therefore lifted, and bodies on other methods are refused early.
    srv.set_payload_max_length(std::numeric_limits<size_t>::max());
    // Runs before any body byte is read: a framing the server will not read is refused here, and
    // the connection closes with the body unread.
    srv.set_pre_routing_handler([o](const httplib::Request & req, httplib::Response & res) {
        int status = 0;
        if (!content_length_is_strict(req)) {
            status = 400;
        } else if (req.method != "POST" && req.method != "DELETE" && has_request_body(req)) {
            status = req.get_header_value_u64("Content-Length") > o->max_body_bytes ? 413 : 400;  // no other route reads one
        }
        if (status == 0) return httplib::Server::HandlerResponse::Unhandled;
        res.status = status;
        if (o->on_status) apply(o->on_status(convert(req, false), status), res);
        return httplib::Server::HandlerResponse::Handled;  // an error: the connection closes after it
    });

    for (auto & rt : routes) {
        auto h = rt.handler;
        auto up = rt.upload;
        // Runs the route for a request whose body (if any) is in r.body, or streams via `reader`.
        auto run = [h, up, o, route = rt.pattern](const httplib::Request & req, httplib::Response & res, std::string body,
                                                  const body_reader * reader) {
            http_request r = convert(req, false);
            r.body = std::move(body);
            r.route = route;
            http_response out;
            try {
                out = up && reader ? up(r, *reader) : h(r);
            } catch (...) {
                out = o->on_exception(r, std::current_exception());
            }
            if (out.stream && o->on_complete) {
                // A streamed body is produced after this returns; report once the stream ends.
                r.body.clear();
                auto done = std::make_shared<stream_completion>(*o, std::move(r), out.status, req);
                out.stream = [fn = std::move(out.stream), done](stream_sink & sink) {
                    fn(sink);
                    done->report();
                };
            }
            apply(out, res);  // a plain response is reported by the post-routing handler below
        };
        // `before` (auth, CORS preflight) decides before any body is read: a refused client cannot
        // make us buffer megabytes, and its unread body is dropped with the connection.
        auto refused_early = [o, route = rt.pattern](const httplib::Request & req, httplib::Response & res) {
            if (!o->before) return false;
            http_request r = convert(req, false);
            r.route = route;
            std::unique_ptr<http_response> early = o->before(r);
            if (!early) return false;
            apply(*early, res);
            if (has_request_body(req) && res.status < 400) res.set_header("Connection", "close");  // errors close anyway
            return true;
        };
        auto plain = [run, refused_early](const httplib::Request & req, httplib::Response & res) {
            if (!refused_early(req, res)) run(req, res, req.body, nullptr);
        };
        auto with_body = [run, up, o, refused_early](const httplib::Request & req, httplib::Response & res, const httplib::ContentReader & content) {
            if (refused_early(req, res)) return;
            if (up) {
                body_reader reader = [&content](const std::function<bool(const char *, size_t)> & sink) {
                    return content([&sink](const char * d, size_t n) { return sink(d, n); });
                };
                run(req, res, {}, &reader);
                return;
            }
            std::string body;
            bool too_large = false;
            bool whole = content([&](const char * d, size_t n) {
                if (body.size() + n > o->max_body_bytes) {
                    too_large = true;
                    return false;
                }
                body.append(d, n);
                return true;
            });
            if (too_large || !whole) {
                res.status = too_large ? 413 : 400;
                if (o->on_status) apply(o->on_status(convert(req, false), res.status), res);  // closes: the rest is never read
                return;
            }
            run(req, res, std::move(body), nullptr);
        };
        // httplib matches ":param" segments; a trailing "*" becomes a regex tail.
        std::string pattern = rt.pattern;
        if (!pattern.empty() && pattern.back() == '*') pattern = pattern.substr(0, pattern.size() - 1) + "(.*)";
        impl_->route_of_pattern[pattern] = rt.pattern;
        if (rt.method == "GET") srv.Get(pattern, plain);
        else if (rt.method == "POST") srv.Post(pattern, with_body);
        else if (rt.method == "DELETE") srv.Delete(pattern, with_body);
        else if (rt.method == "HEAD") srv.Get(pattern, plain);  // httplib answers HEAD through GET routes
        else if (rt.method == "OPTIONS") srv.Options(pattern, plain);
    }
    srv.set_error_handler([o](const httplib::Request & req, httplib::Response & res) {
        // Only for errors without a body (unknown routes, httplib's own 4xx such as 413).
        if (!res.body.empty()) return;
        if (o->on_status) apply(o->on_status(convert(req), res.status), res);
    });
    // Runs for every response just before httplib writes it, whether a route ran or not (no route,
    // 413, malformed requests), with the final status: the one place that sees them all.
    srv.set_post_routing_handler([o, routes_of = &impl_->route_of_pattern](const httplib::Request & req, httplib::Response & res) {
        // httplib marks every error response "Connection: close" (and any the client asked to
        // close); the connection then really closes, so no unread body or bytes after a refusal
        // are ever taken for the next request.
        if (t_presence) t_presence->responding(httplib::detail::has_header_token(res.headers, "Connection", "close"));
        if (!o->on_complete) return;
        if (res.is_chunked_content_provider_) return;  // a stream reports when it ends (stream_completion)
        http_request r = convert(req, false);
        if (auto it = routes_of->find(req.matched_route); it != routes_of->end()) r.route = it->second;
        o->on_complete(r, res.status, ms_since_arrival(req));
    });
}

http_server::~http_server() { stop(); }

result<int> http_server::bind(const std::string & host, int port) {
    errno = 0;
    int bound = port == 0 ? impl_->server.bind_to_any_port(host) : (impl_->server.bind_to_port(host, port) ? port : -1);
    if (bound <= 0) {
        const int err = errno;
        std::string why = err == EADDRINUSE ? "the address is already in use (is another server running on this port?)"
                          : err == EACCES   ? "permission denied (ports below 1024 need privileges)"
                          : err == EADDRNOTAVAIL ? "the address is not one of this machine's"
                          : err != 0        ? std::strerror(err)
                                            : "the host name did not resolve or the socket could not be opened";
        return make_error(errc::io, "cannot listen on " + host + ":" + std::to_string(port) + ": " + why);
    }
    return bound;
}

void http_server::serve() { impl_->server.listen_after_bind(); }

void http_server::wait_until_serving() { impl_->server.wait_until_ready(); }

void http_server::begin_drain() { impl_->server.begin_drain(); }

void http_server::stop() {
    impl_->server.begin_drain();
    impl_->server.wait_drained();
    if (impl_->server.is_running()) impl_->server.stop();
}

}  // namespace rc::http
