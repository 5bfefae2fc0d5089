#include "fleet/etcd/etcd_wire.h"

#include <openssl/evp.h>

#include <regex>

#include "fleet/etcd/etcd_gateway.h"  // declares the base64 codec defined here

namespace rc::fleet::wire {

namespace {

// gRPC status codes the gateway reports in {"code": N}.
constexpr int grpc_not_found = 5;
constexpr int grpc_invalid_argument = 3;
constexpr int grpc_failed_precondition = 9;
constexpr int grpc_out_of_range = 11;
constexpr int grpc_deadline_exceeded = 4;
constexpr int grpc_unavailable = 14;
constexpr int grpc_permission_denied = 7;
constexpr int grpc_unauthenticated = 16;

}  // namespace

int64_t to_int64(const json & j, const char * key) {
    auto it = j.find(key);
    if (it == j.end()) return 0;
    if (it->is_number_integer()) return it->get<int64_t>();
    if (it->is_string()) {
        try {
            return std::stoll(it->get<std::string>());
        } catch (...) {
            return 0;
        }
    }
    return 0;
}

std::string b64(const std::string & s) { return etcd_base64_encode(s); }

std::string unb64(const json & j, const char * key) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_string()) return {};
    return etcd_base64_decode(it->get<std::string>()).value_or(std::string());
}

etcd_kv parse_kv(const json & j) {
    etcd_kv kv;
    kv.key = unb64(j, "key");
    kv.value = unb64(j, "value");
    kv.create_revision = to_int64(j, "create_revision");
    kv.mod_revision = to_int64(j, "mod_revision");
    kv.version = to_int64(j, "version");
    kv.lease = to_int64(j, "lease");
    return kv;
}

etcd_range parse_range(const json & j) {
    etcd_range r;
    if (auto h = j.find("header"); h != j.end()) r.revision = to_int64(*h, "revision");
    if (auto kvs = j.find("kvs"); kvs != j.end() && kvs->is_array())
        for (const auto & kv : *kvs) r.kvs.push_back(parse_kv(kv));
    return r;
}

int64_t header_revision(const json & j) {
    auto h = j.find("header");
    return h == j.end() ? 0 : to_int64(*h, "revision");
}

json range_body(const std::string & key, bool prefix) {
    json b = {{"key", b64(key)}};
    if (prefix) b["range_end"] = b64(etcd_prefix_end(key));
    return b;
}

etcd_error parse_error(const std::string & body, long status) {
    etcd_error e;
    auto j = json::parse(body, nullptr, false);
    if (j.is_object()) {
        if (auto err = j.find("error"); err != j.end() && err->is_object()) j = *err;  // streamed errors nest it
        e.code = j.contains("code") && j["code"].is_number_integer() ? j["code"].get<int>() : -1;
        e.message = j.value("message", j.contains("error") && j["error"].is_string() ? j["error"].get<std::string>() : std::string());
    }
    if (e.message.empty()) e.message = "HTTP " + std::to_string(status) + (body.empty() ? "" : ": " + body.substr(0, 200));
    return e;
}

bool worth_another_member(long status, const etcd_error & e) {
    return status == 503 || status == 502 || status == 504 || e.code == grpc_unavailable || e.code == grpc_deadline_exceeded;
}

error to_error(const std::string & what, const etcd_error & e) {
    errc code = errc::io;
    if (e.code == grpc_not_found) code = errc::not_found;
    else if (e.code == grpc_invalid_argument || e.code == grpc_failed_precondition || e.code == grpc_out_of_range) code = errc::invalid_argument;
    else if (e.code == grpc_unavailable || e.code == grpc_deadline_exceeded) code = errc::unavailable;
    else if (e.code == grpc_permission_denied) code = errc::permission_denied;
    else if (e.code == grpc_unauthenticated) code = errc::unauthenticated;
    return make_error(code, "etcd " + what + ": " + e.message);
}

namespace {

const char * compare_target(etcd_compare::target t) {
    switch (t) {
        case etcd_compare::target::create_revision: return "CREATE";
        case etcd_compare::target::mod_revision: return "MOD";
        case etcd_compare::target::version: return "VERSION";
        case etcd_compare::target::value: return "VALUE";
    }
    return "CREATE";
}

const char * compare_result(etcd_compare::op o) {
    switch (o) {
        case etcd_compare::op::equal: return "EQUAL";
        case etcd_compare::op::not_equal: return "NOT_EQUAL";
        case etcd_compare::op::greater: return "GREATER";
        case etcd_compare::op::less: return "LESS";
    }
    return "EQUAL";
}

}  // namespace

json compare_json(const etcd_compare & c) {
    json j = {{"key", b64(c.key)}, {"target", compare_target(c.what)}, {"result", compare_result(c.result)}};
    switch (c.what) {
        case etcd_compare::target::create_revision: j["create_revision"] = std::to_string(c.number); break;
        case etcd_compare::target::mod_revision: j["mod_revision"] = std::to_string(c.number); break;
        case etcd_compare::target::version: j["version"] = std::to_string(c.number); break;
        case etcd_compare::target::value: j["value"] = b64(c.value); break;
    }
    return j;
}

json op_json(const etcd_op & op) {
    switch (op.what) {
        case etcd_op::kind::put: {
            json p = {{"key", b64(op.key)}, {"value", b64(op.value)}};
            if (op.lease) p["lease"] = std::to_string(op.lease);
            return {{"request_put", p}};
        }
        case etcd_op::kind::del: return {{"request_delete_range", range_body(op.key, op.prefix)}};
        case etcd_op::kind::get: return {{"request_range", range_body(op.key, op.prefix)}};
    }
    return json::object();
}

// etcd's words for a token it no longer takes (expired, etcd restarted) or one that was not sent.
bool token_refused(const std::string & message) {
    return message.find("auth token") != std::string::npos || message.find("user name is empty") != std::string::npos;
}

bool is_endpoint_url(const std::string & s) {
    static const std::regex url(R"(^https?://[A-Za-z0-9.\-\[\]:]+:[0-9]{1,5}$)");
    return std::regex_match(s, url);
}

json leader_json(const etcd_leader & l) {
    return {{"name", b64(l.name)}, {"key", b64(l.key)}, {"rev", std::to_string(l.rev)}, {"lease", std::to_string(l.lease)}};
}


}  // namespace rc::fleet::wire

namespace rc::fleet {

std::string etcd_base64_encode(const std::string & bytes) {
    std::string out(4 * ((bytes.size() + 2) / 3), '\0');
    const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char *>(out.data()), reinterpret_cast<const unsigned char *>(bytes.data()),
                                  static_cast<int>(bytes.size()));
    out.resize(static_cast<size_t>(n));
    return out;
}

std::optional<std::string> etcd_base64_decode(const std::string & text) {
    if (text.size() % 4 != 0) return std::nullopt;
    std::string out(text.size() / 4 * 3, '\0');
    const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char *>(out.data()), reinterpret_cast<const unsigned char *>(text.data()),
                                  static_cast<int>(text.size()));
    if (n < 0) return std::nullopt;
    size_t len = static_cast<size_t>(n);
    // EVP_DecodeBlock counts the padding as zero bytes.
    for (size_t i = text.size(); i > 0 && text[i - 1] == '=' && len > 0; --i) --len;
    out.resize(len);
    return out;
}

}  // namespace rc::fleet
