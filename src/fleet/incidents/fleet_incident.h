#pragma once
// An incident as the fleet shares it: what went wrong on which host, when, under which versions and
// hardware, with its evidence and a stable fingerprint (kind + normalized error + model digest +
// version) that says "the same fault" across hosts and time. Written first to the host's local
// incident log (store/incident_log.h: <models-dir>/incidents.jsonl), then to <prefix>incidents/<id>.
//
//   {"schema":1,"id":"inc-20261129T123456Z-1a2b3c4d","host":"gpu-a","kind":"server_crash",
//    "time":"2026-11-29T12:34:56.789Z","model":"","digest":"","reason":"signal 11 (Segmentation fault)",
//    "fingerprint":"fp-0123456789abcdef","versions":{"rustycage":"0.1.0","llama_commit":"...","backend":"cpu"},
//    "hardware":{...},"evidence":{"error":"...","log_tail":["..."],"request_id":"..."},
//    "ack":{"at":"...","by":"..."}}           (ack only once acknowledged)
//
// Kinds: server_crash, crash_loop, quarantine_failed, model_load_failed, out_of_memory,
// smoke_test_failed, kv_corrupt_blocks, http_5xx_burst.
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "store/incident_log.h"
#include "util/result.h"

namespace rc::fleet {

struct fleet_incident {
    int schema = 1;
    std::string id, host, kind, time, model, digest, reason, fingerprint;
    nlohmann::ordered_json versions = nlohmann::ordered_json::object();
    nlohmann::ordered_json hardware = nlohmann::ordered_json::object();
    nlohmann::ordered_json evidence = nlohmann::ordered_json::object();
    std::string acked_at, acked_by;
};

// Lower-cased, numbers → "N", hex runs of 8+ → "H", file paths → their last component, quoted
// names kept, whitespace collapsed, at most 200 characters: "the same error" however it varies.
std::string normalize_error(std::string_view error);
// "fp-" + 16 hex digits of SHA-256(kind \n normalized error \n digest \n version).
std::string incident_fingerprint(std::string_view kind, std::string_view error, std::string_view digest, std::string_view version);

nlohmann::ordered_json to_json(const fleet_incident & i);
// Errors: invalid_argument when not an object with string id and kind.
result<fleet_incident> parse_fleet_incident(const std::string & text);

// The local log's record → the fleet's. Records this host's agent wrote carry the fleet fields in
// `details` ({"fleet": {...}}); others (a quarantine failure the server or CLI recorded) get them
// here: host, versions, hardware from the arguments, the digest from details.layers[0].
fleet_incident from_local(const store::incident & local, const std::string & host, const nlohmann::ordered_json & versions,
                          const nlohmann::ordered_json & hardware);

}  // namespace rc::fleet
