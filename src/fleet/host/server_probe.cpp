#include "fleet/host/server_probe.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <sstream>

#include "http/http_client.h"

namespace rc::fleet {

namespace {

using json = nlohmann::json;

result<http::client_reply> get(const std::string & url, std::chrono::milliseconds timeout, const std::string & api_key = "") {
    http::client_request req;
    req.url = url;
    if (!api_key.empty()) req.headers.push_back("Authorization: Bearer " + api_key);
    req.timeout = timeout;
    req.connect_timeout = std::min(timeout, std::chrono::milliseconds(1000));
    return http::call(req);
}

json get_json(const std::string & url, std::chrono::milliseconds timeout, const std::string & api_key) {
    auto r = get(url, timeout, api_key);
    if (!r.ok() || !r->ok()) return json();
    auto j = json::parse(r->body, nullptr, false);
    return j.is_discarded() ? json() : j;
}

}  // namespace

ready_probe probe_ready(const std::string & base_url, std::chrono::milliseconds timeout) {
    ready_probe p;
    auto r = get(base_url + "/v1/health/ready", timeout);
    if (!r.ok()) {
        p.error = r.err().message;
        return p;
    }
    p.reachable = true;
    p.ready = r->status == 200;
    if (!p.ready) {
        auto j = json::parse(r->body, nullptr, false);
        p.error = "HTTP " + std::to_string(r->status) + (j.is_object() ? ": " + j.value("message", std::string()) : std::string());
    }
    return p;
}

std::vector<prom_sample> parse_prometheus_text(const std::string & text) {
    std::vector<prom_sample> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#') continue;
        prom_sample s;
        size_t pos = line.find_first_of("{ ");
        if (pos == std::string::npos) continue;
        s.name = line.substr(0, pos);
        if (line[pos] == '{') {
            size_t i = pos + 1;
            while (i < line.size() && line[i] != '}') {
                size_t eq = line.find('=', i);
                if (eq == std::string::npos || eq + 1 >= line.size() || line[eq + 1] != '"') break;
                std::string key = line.substr(i, eq - i);
                std::string value;
                size_t j = eq + 2;
                for (; j < line.size() && line[j] != '"'; ++j) {
                    if (line[j] == '\\' && j + 1 < line.size()) {
                        ++j;
                        value += line[j] == 'n' ? '\n' : line[j];
                    } else {
                        value += line[j];
                    }
                }
                s.labels[key] = value;
                i = j + 1;
                if (i < line.size() && line[i] == ',') ++i;
            }
            pos = line.find('}', i);
            if (pos == std::string::npos) continue;
            ++pos;
        }
        const char * start = line.c_str() + pos;
        char * end = nullptr;
        s.value = std::strtod(start, &end);
        if (end == start) continue;
        out.push_back(std::move(s));
    }
    return out;
}

server_snapshot probe_server(const std::string & base, std::chrono::milliseconds timeout, const std::string & api_key) {
    server_snapshot s;
    s.health = probe_ready(base, timeout);
    if (!s.health.reachable) return s;
    json meta = get_json(base + "/v1/metadata", timeout, api_key);
    if (meta.is_object()) {
        s.version = meta.value("version", "");
        if (meta.contains("build") && meta["build"].is_object()) {
            s.llama_commit = meta["build"].value("llama_commit", "");
            s.build_info = meta["build"].value("build_info", "");
        }
    }
    json tags = get_json(base + "/api/tags", timeout, api_key);
    if (tags.is_object() && tags.contains("models") && tags["models"].is_array())
        for (const auto & m : tags["models"])
            s.models.push_back({m.value("name", ""), m.value("digest", ""), "ready", false, m.value("size", uint64_t(0))});
    json ps = get_json(base + "/api/ps", timeout, api_key);
    if (ps.is_object() && ps.contains("models") && ps["models"].is_array()) {
        for (const auto & m : ps["models"]) {
            const std::string name = m.value("name", "");
            bool found = false;
            for (auto & f : s.models)
                if (f.name == name) found = f.loaded = true;
            if (!found) s.models.push_back({name, m.value("digest", ""), "ready", true, m.value("size", uint64_t(0))});
            const json t = m.value("kv_tiers", json::object());
            if (t.contains("context") && t["context"].is_object()) {
                s.kv.context_cells_used += t["context"].value("cells_used", uint64_t(0));
                s.kv.context_cells_total += t["context"].value("cells_total", uint64_t(0));
            }
            if (t.contains("host") && t["host"].is_object()) {
                s.kv.host_bytes += t["host"].value("bytes", uint64_t(0));
                s.kv.host_budget += t["host"].value("budget", uint64_t(0));
            }
            if (t.contains("disk") && t["disk"].is_object()) {
                s.kv.disk_bytes += t["disk"].value("bytes", uint64_t(0));
                s.kv.disk_budget += t["disk"].value("budget", uint64_t(0));
            }
        }
    }
    auto metrics = get(base + "/metrics", timeout, api_key);
    if (metrics.ok() && metrics->ok()) {
        s.load.known = true;
        for (const auto & m : parse_prometheus_text(metrics->body)) {
            const auto v = static_cast<uint64_t>(m.value);
            if (m.name == "rustycage_kv_prompt_tokens_total") {
                const std::string src = m.labels.count("source") ? m.labels.at("source") : "";
                if (src == "computed") s.kv.tokens_computed += v;
                else if (src == "context") s.kv.tokens_context += v;
                else if (src == "host") s.kv.tokens_host += v;
                else if (src == "disk") s.kv.tokens_disk += v;
            } else if (m.name == "rustycage_running_sequences") {
                s.load.running += v;
            } else if (m.name == "rustycage_queue_depth") {
                s.load.queued += v;
            } else if (m.name == "rustycage_kv_corrupt_blocks_total") {
                s.corrupt_blocks += v;
            } else if (m.name == "rustycage_requests_total") {
                auto st = m.labels.find("status");
                if (st != m.labels.end() && st->second.size() == 3 && st->second[0] == '5') {
                    s.responses_5xx += v;
                    s.routes_5xx[m.labels.count("route") ? m.labels.at("route") : "?"] += v;
                }
            }
        }
    }
    return s;
}

}  // namespace rc::fleet
