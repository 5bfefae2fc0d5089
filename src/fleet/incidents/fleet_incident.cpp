#include "fleet/incidents/fleet_incident.h"

#include <cctype>

#include "util/sha256.h"

namespace rc::fleet {

namespace {

using ojson = nlohmann::ordered_json;

bool is_hex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

std::string str(const ojson & j, const char * key) {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

ojson obj(const ojson & j, const char * key) {
    auto it = j.find(key);
    return it != j.end() && it->is_object() ? *it : ojson::object();
}

}  // namespace

std::string normalize_error(std::string_view in) {
    std::string out;
    size_t i = 0;
    while (i < in.size() && out.size() < 200) {
        const char c = in[i];
        // A path: keep its last component only (temp dirs, home dirs and pids differ per host).
        if (c == '/' && (i == 0 || in[i - 1] == ' ' || in[i - 1] == '\'' || in[i - 1] == '"' || in[i - 1] == '=' || in[i - 1] == '(')) {
            size_t end = i;
            while (end < in.size() && !std::isspace(static_cast<unsigned char>(in[end])) && in[end] != '\'' && in[end] != '"' && in[end] != ')' &&
                   in[end] != ',' && in[end] != ':')
                ++end;
            std::string_view path = in.substr(i, end - i);
            const size_t slash = path.rfind('/');
            out += std::string(path.substr(slash + 1));
            i = end;
            continue;
        }
        if (std::isalnum(static_cast<unsigned char>(c))) {
            size_t end = i;
            while (end < in.size() && (std::isalnum(static_cast<unsigned char>(in[end])) || in[end] == '_')) ++end;
            std::string_view word = in.substr(i, end - i);
            bool all_hex = word.size() >= 8, all_digit = true;
            for (char w : word) {
                all_hex = all_hex && is_hex(w);
                all_digit = all_digit && std::isdigit(static_cast<unsigned char>(w));
            }
            if (all_digit) out += 'N';
            else if (all_hex || (word.size() > 2 && word[0] == '0' && (word[1] == 'x' || word[1] == 'X'))) out += 'H';
            else
                for (char w : word) out += static_cast<char>(std::tolower(static_cast<unsigned char>(w)));
            i = end;
            continue;
        }
        if (std::isspace(static_cast<unsigned char>(c))) {
            if (!out.empty() && out.back() != ' ') out += ' ';
            ++i;
            continue;
        }
        out += c;
        ++i;
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
}

std::string incident_fingerprint(std::string_view kind, std::string_view error, std::string_view digest, std::string_view version) {
    const std::string text = std::string(kind) + "\n" + normalize_error(error) + "\n" + std::string(digest) + "\n" + std::string(version);
    return "fp-" + to_hex(sha256_of(text)).substr(0, 16);
}

ojson to_json(const fleet_incident & i) {
    ojson j = {{"schema", i.schema}, {"id", i.id},         {"host", i.host},         {"kind", i.kind},
               {"time", i.time},     {"model", i.model},   {"digest", i.digest},     {"reason", i.reason},
               {"fingerprint", i.fingerprint}, {"versions", i.versions}, {"hardware", i.hardware}, {"evidence", i.evidence}};
    if (!i.acked_at.empty()) j["ack"] = {{"at", i.acked_at}, {"by", i.acked_by}};
    return j;
}

result<fleet_incident> parse_fleet_incident(const std::string & text) {
    ojson j = ojson::parse(text, nullptr, false);
    if (!j.is_object() || !j.contains("id") || !j["id"].is_string() || !j.contains("kind") || !j["kind"].is_string())
        return make_error(errc::invalid_argument, "not an incident record");
    fleet_incident i;
    i.schema = j.value("schema", 1);
    i.id = str(j, "id");
    i.host = str(j, "host");
    i.kind = str(j, "kind");
    i.time = str(j, "time");
    i.model = str(j, "model");
    i.digest = str(j, "digest");
    i.reason = str(j, "reason");
    i.fingerprint = str(j, "fingerprint");
    i.versions = obj(j, "versions");
    i.hardware = obj(j, "hardware");
    i.evidence = obj(j, "evidence");
    const ojson ack = obj(j, "ack");
    i.acked_at = str(ack, "at");
    i.acked_by = str(ack, "by");
    return i;
}

fleet_incident from_local(const store::incident & local, const std::string & host, const ojson & versions, const ojson & hardware) {
    fleet_incident i;
    i.id = local.id;
    i.kind = local.kind;
    i.time = store::format_rfc3339(local.time);
    i.model = local.model;
    i.reason = local.reason;
    const ojson fleet = obj(local.details, "fleet");
    i.host = str(fleet, "host").empty() ? host : str(fleet, "host");
    i.versions = fleet.contains("versions") ? obj(fleet, "versions") : versions;
    i.hardware = fleet.contains("hardware") ? obj(fleet, "hardware") : hardware;
    i.digest = str(fleet, "digest");
    if (i.digest.empty())
        if (auto layers = local.details.find("layers"); layers != local.details.end() && layers->is_array() && !layers->empty() &&
                                                        (*layers)[0].is_string())
            i.digest = (*layers)[0].get<std::string>();
    i.evidence = fleet.contains("evidence") ? obj(fleet, "evidence") : ojson{{"error", local.reason}, {"details", local.details}};
    i.fingerprint = str(fleet, "fingerprint");
    if (i.fingerprint.empty()) i.fingerprint = incident_fingerprint(i.kind, i.reason, i.digest, str(i.versions, "rustycage"));
    return i;
}

}  // namespace rc::fleet
