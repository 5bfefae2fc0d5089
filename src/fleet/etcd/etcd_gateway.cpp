#include "fleet/etcd/etcd_gateway.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <sstream>

#include "fleet/etcd/etcd_wire.h"
#include "http/http_client.h"

namespace rc::fleet {

using json = nlohmann::json;
using namespace wire;

result<std::vector<std::string>> parse_etcd_endpoints(const std::string & csv) {
    std::vector<std::string> out;
    std::stringstream ss(csv);
    for (std::string item; std::getline(ss, item, ',');) {
        while (!item.empty() && (item.back() == '/' || item.back() == ' ')) item.pop_back();
        while (!item.empty() && item.front() == ' ') item.erase(item.begin());
        if (item.empty()) continue;
        if (!is_endpoint_url(item))
            return make_error(errc::invalid_argument, "etcd endpoint '" + item + "' is not a URL like http://127.0.0.1:2379");
        out.push_back(item);
    }
    if (out.empty()) return make_error(errc::invalid_argument, "no etcd endpoint given (--etcd http://HOST:2379[,http://HOST:2379...])");
    return out;
}

bool is_loopback_url(const std::string & url) {
    static const std::regex loop(R"(^https?://(localhost|127\.[0-9.]+|\[::1\])(:[0-9]+)?/?$)");
    return std::regex_match(url, loop);
}

status check_etcd_security(const etcd_options & o, const std::string & flag) {
    for (const auto & e : o.endpoints)
        if (e.starts_with("http://") && !is_loopback_url(e) && !o.allow_insecure)
            return make_error(errc::invalid_argument, "etcd endpoint " + e + " is plain HTTP on the network: use https:// (" + flag + "-cacert, " + flag +
                                                          "-cert, " + flag + "-key), or accept that anyone on the path can read and change the fleet with " +
                                                          flag + "-insecure");
    if (o.cert_file.empty() != o.key_file.empty())
        return make_error(errc::invalid_argument, "a client certificate needs its key: give " + flag + "-cert and " + flag + "-key together");
    return {};
}

bool fleet_auth_off_on_network(const etcd_options & o) {
    if (!o.user.empty() || !o.cert_file.empty()) return false;
    return std::any_of(o.endpoints.begin(), o.endpoints.end(), [](const std::string & e) { return !is_loopback_url(e); });
}

etcd_gateway::etcd_gateway(etcd_options opts) : opts_(std::move(opts)) {}

http::client_request etcd_gateway::post(const std::string & endpoint, const std::string & path, const json & body, std::chrono::milliseconds timeout,
                                bool with_token) const {
    http::client_request req;
    req.method = "POST";
    req.url = endpoint + "/v3/" + path;
    req.headers = {"Content-Type: application/json"};
    if (with_token)
        if (std::string t = token(); !t.empty()) req.headers.push_back("Authorization: " + t);
    req.body = body.dump();
    req.timeout = timeout;  // 0: a stream without an overall limit
    req.connect_timeout = opts_.connect_timeout;
    req.ca_file = opts_.ca_file;
    req.cert_file = opts_.cert_file;
    req.key_file = opts_.key_file;
    return req;
}

std::string etcd_gateway::token() const {
    std::lock_guard lock(mu_);
    return token_;
}

void etcd_gateway::forget_token() {
    std::lock_guard lock(mu_);
    token_.clear();
}

status etcd_gateway::authenticate() {
    if (opts_.user.empty()) return {};
    auto j = call_members("auth/authenticate", {{"name", opts_.user}, {"password", opts_.password}}, opts_.request_timeout, false);
    if (!j.ok()) {
        if (j.err().code == errc::unavailable) return j.err();
        return make_error(errc::unauthenticated, "etcd refused user '" + opts_.user + "' (--etcd-user, --etcd-password-file): " + j.err().message);
    }
    const std::string t = j->value("token", "");
    if (t.empty()) return make_error(errc::unauthenticated, "etcd gave user '" + opts_.user + "' no token: is authentication enabled?");
    std::lock_guard lock(mu_);
    token_ = t;
    return {};
}

std::vector<std::string> etcd_gateway::endpoints() const {
    std::lock_guard lock(mu_);
    return opts_.endpoints;
}

result<size_t> etcd_gateway::sync_members() {
    auto j = call("cluster/member/list", json::object());
    if (!j.ok()) return j.err();
    std::vector<std::string> found;
    if (auto ms = j->find("members"); ms != j->end() && ms->is_array())
        for (const auto & m : *ms)
            if (auto urls = m.find("clientURLs"); urls != m.end() && urls->is_array())
                for (const auto & u : *urls) {
                    if (!u.is_string()) continue;
                    std::string s = u.get<std::string>();
                    while (!s.empty() && s.back() == '/') s.pop_back();
                    if (is_endpoint_url(s) && (opts_.allow_insecure || !s.starts_with("http://") || is_loopback_url(s))) found.push_back(s);
                }
    std::lock_guard lock(mu_);
    size_t added = 0;
    for (const auto & u : found)
        if (std::find(opts_.endpoints.begin(), opts_.endpoints.end(), u) == opts_.endpoints.end()) {
            opts_.endpoints.push_back(u);  // appended: indexes held by calls in flight stay valid
            ++added;
        }
    return added;
}

bool etcd_gateway::member_answers(const std::string & endpoint) {
    const auto limit = std::min(opts_.request_timeout, std::max(opts_.stream_idle, std::chrono::milliseconds(500)));
    // A linearizable read: etcd confirms its quorum before it checks the caller's rights, so a refusal
    // (401/403: a role that may not read this key) proves the member is alive and in quorum as well as
    // an answer does. Only no reply in time, or a 5xx (no leader, timed out), counts as hung.
    auto r = http::call(post(endpoint, "kv/range", {{"key", b64("liveness")}, {"count_only", true}}, limit));
    return r.ok() && r->status < 500;
}

result<json> etcd_gateway::call(const std::string & path, const json & body, std::chrono::milliseconds timeout) {
    if (timeout.count() <= 0) timeout = opts_.request_timeout;
    if (!opts_.user.empty() && token().empty())
        if (auto st = authenticate(); !st) return st.err();
    auto r = call_members(path, body, timeout, true);
    if (!r.ok() && !opts_.user.empty() && token_refused(r.err().message)) {  // expired, or etcd restarted: a new token, once
        if (auto st = authenticate(); !st) return st.err();
        r = call_members(path, body, timeout, true);
    }
    return r;
}

result<json> etcd_gateway::call_members(const std::string & path, const json & body, std::chrono::milliseconds timeout, bool with_token) {
    const std::vector<std::string> eps = endpoints();
    const size_t n = eps.size();
    if (n == 0) return make_error(errc::invalid_argument, "no etcd endpoint configured");
    std::string failures;
    const size_t first = preferred_.load();
    for (size_t i = 0; i < n; ++i) {
        const size_t idx = (first + i) % n;
        auto r = http::call(post(eps[idx], path, body, timeout, with_token));
        if (!r.ok()) {
            failures += (failures.empty() ? "" : "; ") + r.err().message;
            continue;
        }
        if (r->ok()) {
            auto j = json::parse(r->body, nullptr, false);
            if (j.is_discarded()) return make_error(errc::io, "etcd " + path + ": the answer is not JSON");
            preferred_.store(idx);
            return j;
        }
        etcd_error e = parse_error(r->body, r->status);
        if (worth_another_member(r->status, e)) {
            failures += (failures.empty() ? "" : "; ") + eps[idx] + ": " + e.message;
            continue;
        }
        preferred_.store(idx);
        return to_error(path, e);
    }
    return make_error(errc::unavailable, "no etcd member answered " + path + " (" + failures + ")");
}

result<long> etcd_gateway::stream(const std::string & path, const json & body, const std::function<bool(std::string_view)> & on_data,
                                  const stop_fn & should_stop, std::string * error_body) {
    using steady = std::chrono::steady_clock;
    const std::vector<std::string> eps = endpoints();
    const size_t n = eps.size();
    if (n == 0) return make_error(errc::invalid_argument, "no etcd endpoint configured");
    if (!opts_.user.empty() && token().empty())
        if (auto st = authenticate(); !st) return st.err();
    std::string failures;
    const size_t first = preferred_.load();
    for (size_t i = 0; i < n; ++i) {
        const size_t idx = (first + i) % n;
        bool got_data = false, hung = false;
        auto quiet_since = steady::now();
        // A silent stream is fine while its member answers a read; a member that does not is hung.
        auto stop_or_hung = [&] {
            if (should_stop()) return true;
            if (opts_.stream_idle.count() <= 0 || steady::now() - quiet_since < opts_.stream_idle) return false;
            if (member_answers(eps[idx])) {
                quiet_since = steady::now();
                return false;
            }
            hung = true;
            return true;
        };
        auto r = http::stream(
            post(eps[idx], path, body, std::chrono::milliseconds(0)),
            [&](std::string_view d) {
                got_data = true;
                quiet_since = steady::now();
                return on_data(d);
            },
            stop_or_hung);
        if (hung) {
            preferred_.store((idx + 1) % n);
            const std::string why = "etcd member " + eps[idx] + " stopped answering (a silent " + path + " stream and no answer to a read)";
            if (got_data) return make_error(errc::unavailable, why);  // the caller resumes on the next member
            failures += (failures.empty() ? "" : "; ") + why;
            continue;
        }
        if (!r.ok()) {
            if (got_data) return r.err();  // the stream started and broke: the caller resumes
            failures += (failures.empty() ? "" : "; ") + r.err().message;
            if (should_stop()) break;
            continue;
        }
        if (!r->ok()) {
            etcd_error e = parse_error(r->body, r->status);
            if (worth_another_member(r->status, e)) {
                failures += (failures.empty() ? "" : "; ") + e.message;
                continue;
            }
            if (error_body) *error_body = r->body;
            if (!opts_.user.empty() && token_refused(e.message)) forget_token();  // the caller's retry buys a new one
            return to_error(path, e);
        }
        preferred_.store(idx);
        return r->status;
    }
    return make_error(errc::unavailable, "no etcd member answered " + path + " (" + failures + ")");
}

result<etcd_range> etcd_gateway::get(const std::string & key) {
    auto j = call("kv/range", range_body(key, false));
    if (!j.ok()) return j.err();
    return parse_range(j.value());
}

result<etcd_range> etcd_gateway::get_prefix(const std::string & prefix) {
    auto j = call("kv/range", range_body(prefix, true));
    if (!j.ok()) return j.err();
    return parse_range(j.value());
}

result<int64_t> etcd_gateway::put(const std::string & key, const std::string & value, int64_t lease) {
    json b = {{"key", b64(key)}, {"value", b64(value)}};
    if (lease) b["lease"] = std::to_string(lease);
    auto j = call("kv/put", b);
    if (!j.ok()) return j.err();
    return header_revision(j.value());
}

result<int64_t> etcd_gateway::del(const std::string & key, bool prefix) {
    auto j = call("kv/deleterange", range_body(key, prefix));
    if (!j.ok()) return j.err();
    return to_int64(j.value(), "deleted");
}

result<etcd_txn_result> etcd_gateway::txn(const std::vector<etcd_compare> & compares, const std::vector<etcd_op> & success,
                                          const std::vector<etcd_op> & failure) {
    json b = {{"compare", json::array()}, {"success", json::array()}, {"failure", json::array()}};
    for (const auto & c : compares) b["compare"].push_back(compare_json(c));
    for (const auto & o : success) b["success"].push_back(op_json(o));
    for (const auto & o : failure) b["failure"].push_back(op_json(o));
    auto j = call("kv/txn", b);
    if (!j.ok()) return j.err();
    etcd_txn_result out;
    out.succeeded = j->value("succeeded", false);
    out.revision = header_revision(j.value());
    if (auto rs = j->find("responses"); rs != j->end() && rs->is_array())
        for (const auto & r : *rs)
            if (auto rr = r.find("response_range"); rr != r.end()) out.ranges.push_back(parse_range(*rr));
    return out;
}

result<int64_t> etcd_gateway::grant(std::chrono::seconds ttl) {
    auto j = call("lease/grant", {{"TTL", std::to_string(ttl.count())}});
    if (!j.ok()) return j.err();
    if (j->contains("error") && j->value("error", "") != "") return make_error(errc::io, "etcd lease/grant: " + j->value("error", ""));
    const int64_t id = to_int64(j.value(), "ID");
    if (id == 0) return make_error(errc::io, "etcd lease/grant answered no lease ID");
    return id;
}

result<int64_t> etcd_gateway::keepalive(int64_t lease) {
    auto j = call("lease/keepalive", {{"ID", std::to_string(lease)}}, opts_.keepalive_timeout);
    if (!j.ok()) return j.err();
    const json & r = j->contains("result") ? (*j)["result"] : j.value();
    return to_int64(r, "TTL");  // absent (0): etcd no longer knows the lease
}

status etcd_gateway::revoke(int64_t lease) {
    auto j = call("lease/revoke", {{"ID", std::to_string(lease)}});
    if (!j.ok() && j.err().code != errc::not_found) return j.err();
    return {};
}

result<etcd_lease_ttl> etcd_gateway::time_to_live(int64_t lease) {
    auto j = call("lease/timetolive", {{"ID", std::to_string(lease)}});
    if (!j.ok()) return j.err();
    etcd_lease_ttl t;
    t.ttl = j->contains("TTL") ? to_int64(j.value(), "TTL") : -1;
    t.granted_ttl = to_int64(j.value(), "grantedTTL");
    return t;
}

result<std::vector<std::string>> etcd_gateway::alarms() {
    auto j = call("maintenance/alarm", {{"action", "GET"}, {"memberID", "0"}, {"alarm", "NONE"}});
    if (!j.ok()) return j.err();
    std::vector<std::string> out;
    for (const auto & a : j->value("alarms", json::array())) {
        if (!a.is_object()) continue;
        const std::string kind = a.value("alarm", "NONE");
        if (kind == "NONE") continue;
        std::string member = a.contains("memberID") ? a["memberID"].dump() : "?";
        if (a.contains("memberID") && a["memberID"].is_string()) {  // a decimal uint64 in the JSON gateway
            char hex[32];
            std::snprintf(hex, sizeof hex, "%llx", std::strtoull(a["memberID"].get<std::string>().c_str(), nullptr, 10));
            member = hex;
        }
        out.push_back(kind + " on member " + member);
    }
    return out;
}

result<etcd_watch_end> etcd_gateway::watch(const std::string & prefix, int64_t start_revision, const etcd_events_fn & on_events,
                                           const stop_fn & should_stop) {
    json create = range_body(prefix, true);
    if (start_revision > 0) create["start_revision"] = std::to_string(start_revision);
    etcd_watch_end end{start_revision, false};
    std::string buffer;
    bool canceled = false;
    // The gateway writes one JSON object per message, each followed by a newline.
    auto on_data = [&](std::string_view data) {
        buffer.append(data);
        for (size_t nl; (nl = buffer.find('\n')) != std::string::npos;) {
            std::string line = buffer.substr(0, nl);
            buffer.erase(0, nl + 1);
            auto j = json::parse(line, nullptr, false);
            if (!j.is_object()) continue;
            if (j.contains("error")) {
                if (!opts_.user.empty() && token_refused(j.dump())) forget_token();  // the caller's retry buys a new one
                canceled = true;
                return false;
            }
            const json & r = j.contains("result") ? j["result"] : j;
            if (r.value("canceled", false)) {
                const int64_t compact = to_int64(r, "compact_revision");
                if (compact > 0) {
                    end.compacted = true;
                    end.next_revision = compact;
                }
                canceled = true;
                return false;
            }
            std::vector<etcd_event> events;
            if (auto ev = r.find("events"); ev != r.end() && ev->is_array()) {
                for (const auto & e : *ev) {
                    etcd_event out;
                    out.is_delete = e.value("type", "PUT") == "DELETE";
                    if (auto kv = e.find("kv"); kv != e.end()) out.kv = parse_kv(*kv);
                    end.next_revision = std::max(end.next_revision, out.kv.mod_revision + 1);
                    events.push_back(std::move(out));
                }
            }
            const int64_t rev = header_revision(r);
            if (!events.empty()) on_events(events, rev);
        }
        return !should_stop();
    };
    std::string error_body;
    auto r = stream("watch", {{"create_request", create}}, on_data, should_stop, &error_body);
    if (!r.ok()) return r.err();
    if (end.compacted || should_stop()) return end;
    if (canceled) return make_error(errc::unavailable, "etcd watch was cancelled by the server");
    return make_error(errc::unavailable, "etcd watch stream ended");
}

result<etcd_leader> etcd_gateway::campaign(const std::string & name, int64_t lease, const std::string & value, const stop_fn & should_stop) {
    std::string body;
    auto on_data = [&](std::string_view d) {
        body.append(d);
        return body.size() < (1u << 20);
    };
    json req = {{"name", b64(name)}, {"lease", std::to_string(lease)}, {"value", b64(value)}};
    auto r = stream("election/campaign", req, on_data, should_stop, nullptr);
    if (!r.ok()) return r.err();
    if (should_stop()) return make_error(errc::unavailable, "campaign stopped");
    auto j = json::parse(body, nullptr, false);
    if (!j.is_object() || !j.contains("leader")) return make_error(errc::unavailable, "etcd election/campaign ended without a leader");
    const json & l = j["leader"];
    etcd_leader out;
    out.name = unb64(l, "name");
    out.key = unb64(l, "key");
    out.rev = to_int64(l, "rev");
    out.lease = to_int64(l, "lease");
    out.value = value;
    return out;
}

result<std::optional<etcd_leader>> etcd_gateway::leader(const std::string & name) {
    auto j = call("election/leader", {{"name", b64(name)}});
    if (!j.ok()) {
        if (j.err().message.find("no leader") != std::string::npos) return std::optional<etcd_leader>{};
        return j.err();
    }
    auto kv = j->find("kv");
    if (kv == j->end()) return std::optional<etcd_leader>{};
    etcd_kv k = parse_kv(*kv);
    return std::optional<etcd_leader>(etcd_leader{name, k.key, k.create_revision, k.lease, k.value});
}

status etcd_gateway::resign(const etcd_leader & l) {
    auto j = call("election/resign", {{"leader", leader_json(l)}});
    if (!j.ok()) return j.err();
    return {};
}

}  // namespace rc::fleet
