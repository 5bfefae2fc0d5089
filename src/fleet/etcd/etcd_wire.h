#pragma once
// The JSON of etcd's gateway (3.4), for etcd_gateway.cpp: keys and values in base64, int64 as
// decimal strings, gRPC error codes mapped to errc. Internal to the fleet module.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "fleet/etcd/etcd_client.h"
#include "util/result.h"

namespace rc::fleet::wire {

using json = nlohmann::json;

int64_t to_int64(const json & j, const char * key);  // a number or a decimal string; 0 when absent
std::string b64(const std::string & s);
std::string unb64(const json & j, const char * key);  // "" when absent or not base64
etcd_kv parse_kv(const json & j);
etcd_range parse_range(const json & j);
int64_t header_revision(const json & j);
json range_body(const std::string & key, bool prefix);
json compare_json(const etcd_compare & c);
json op_json(const etcd_op & op);
json leader_json(const etcd_leader & l);

// An error answer of the gateway: {"error": "...", "message": "...", "code": N} (streams nest it).
struct etcd_error {
    int code = -1;
    std::string message;
};
etcd_error parse_error(const std::string & body, long status);
// No leader, a timeout, a 5xx: another member may answer.
bool worth_another_member(long status, const etcd_error & e);
// not_found, invalid_argument, unavailable, permission_denied, unauthenticated, else io.
error to_error(const std::string & what, const etcd_error & e);
// etcd's words for a token it no longer takes (expired, etcd restarted) or one that was not sent.
bool token_refused(const std::string & message);
bool is_endpoint_url(const std::string & s);  // http(s)://host:port

}  // namespace rc::fleet::wire
