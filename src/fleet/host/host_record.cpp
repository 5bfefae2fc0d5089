#include "fleet/host/host_record.h"

namespace rc::fleet {

namespace {

using ojson = nlohmann::ordered_json;
using json = nlohmann::json;

template <typename T>
T get_or(const json & j, const char * key, T fallback) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return fallback;
    try {
        return it->get<T>();
    } catch (...) {
        return fallback;
    }
}

const json & object_at(const json & j, const char * key) {
    static const json empty = json::object();
    auto it = j.find(key);
    return it != j.end() && it->is_object() ? *it : empty;
}

}  // namespace

double kv_facts::hit_rate() const {
    const double reused = double(tokens_context + tokens_host + tokens_disk);
    const double total = reused + double(tokens_computed);
    return total > 0 ? reused / total : 0.0;
}

ojson to_json(const host_record & r) {
    ojson devices = ojson::array();
    for (const auto & d : r.devices)
        devices.push_back({{"name", d.name}, {"description", d.description}, {"type", d.type}, {"memory_total", d.memory_total},
                           {"memory_free", d.memory_free}});
    ojson models = ojson::array();
    for (const auto & m : r.models)
        models.push_back({{"name", m.name}, {"digest", m.digest}, {"status", m.status}, {"loaded", m.loaded}, {"size", m.size}});
    const auto & k = r.kv;
    return {{"schema", r.schema},
            {"id", r.id},
            {"agent", {{"pid", r.agent_pid}, {"version", r.agent_version}, {"started_at", r.agent_started_at}}},
            {"addresses", {{"openai", r.openai_url}, {"ollama", r.ollama_url}}},
            {"version", r.version},
            {"llama_commit", r.llama_commit},
            {"backend", r.backend},
            {"build_info", r.build_info},
            {"devices", devices},
            {"memory", {{"total", r.memory_total}, {"available", r.memory_available}}},
            {"server",
             {{"state", r.server.state}, {"ready", r.server.ready}, {"pid", r.server.pid}, {"restarts", r.server.restarts},
              {"since", r.server.since}, {"last_exit", r.server.last_exit}}},
            {"models", models},
            {"kv",
             {{"context_cells_used", k.context_cells_used}, {"context_cells_total", k.context_cells_total}, {"host_bytes", k.host_bytes},
              {"host_budget", k.host_budget}, {"disk_bytes", k.disk_bytes}, {"disk_budget", k.disk_budget},
              {"prompt_tokens", {{"computed", k.tokens_computed}, {"context", k.tokens_context}, {"host", k.tokens_host}, {"disk", k.tokens_disk}}},
              {"hit_rate", k.hit_rate()}}},
            {"load", r.load.known ? ojson{{"running", r.load.running}, {"queued", r.load.queued}} : ojson(nullptr)},
            {"triage", {{"candidate", r.triage_candidate}}},
            {"updated_at", r.updated_at}};
}

result<host_record> parse_host_record(const std::string & text) {
    json j = json::parse(text, nullptr, false);
    if (!j.is_object() || !j.contains("id") || !j["id"].is_string()) return make_error(errc::invalid_argument, "not a host record");
    host_record r;
    r.schema = get_or(j, "schema", 0);
    r.id = j["id"].get<std::string>();
    const json & agent = object_at(j, "agent");
    r.agent_pid = get_or(agent, "pid", 0);
    r.agent_version = get_or<std::string>(agent, "version", "");
    r.agent_started_at = get_or<std::string>(agent, "started_at", "");
    const json & addr = object_at(j, "addresses");
    r.openai_url = get_or<std::string>(addr, "openai", "");
    r.ollama_url = get_or<std::string>(addr, "ollama", "");
    r.version = get_or<std::string>(j, "version", "");
    r.llama_commit = get_or<std::string>(j, "llama_commit", "");
    r.backend = get_or<std::string>(j, "backend", "");
    r.build_info = get_or<std::string>(j, "build_info", "");
    if (auto d = j.find("devices"); d != j.end() && d->is_array())
        for (const auto & x : *d)
            if (x.is_object())
                r.devices.push_back({get_or<std::string>(x, "name", ""), get_or<std::string>(x, "description", ""), get_or<std::string>(x, "type", ""),
                                     get_or<uint64_t>(x, "memory_total", 0), get_or<uint64_t>(x, "memory_free", 0)});
    const json & mem = object_at(j, "memory");
    r.memory_total = get_or<uint64_t>(mem, "total", 0);
    r.memory_available = get_or<uint64_t>(mem, "available", 0);
    const json & s = object_at(j, "server");
    r.server.state = get_or<std::string>(s, "state", "unknown");
    r.server.ready = get_or(s, "ready", false);
    r.server.pid = get_or(s, "pid", 0);
    r.server.restarts = get_or(s, "restarts", 0);
    r.server.since = get_or<std::string>(s, "since", "");
    r.server.last_exit = get_or<std::string>(s, "last_exit", "");
    if (auto m = j.find("models"); m != j.end() && m->is_array())
        for (const auto & x : *m)
            if (x.is_object())
                r.models.push_back({get_or<std::string>(x, "name", ""), get_or<std::string>(x, "digest", ""), get_or<std::string>(x, "status", ""),
                                    get_or(x, "loaded", false), get_or<uint64_t>(x, "size", 0)});
    const json & kv = object_at(j, "kv");
    r.kv.context_cells_used = get_or<uint64_t>(kv, "context_cells_used", 0);
    r.kv.context_cells_total = get_or<uint64_t>(kv, "context_cells_total", 0);
    r.kv.host_bytes = get_or<uint64_t>(kv, "host_bytes", 0);
    r.kv.host_budget = get_or<uint64_t>(kv, "host_budget", 0);
    r.kv.disk_bytes = get_or<uint64_t>(kv, "disk_bytes", 0);
    r.kv.disk_budget = get_or<uint64_t>(kv, "disk_budget", 0);
    const json & pt = object_at(kv, "prompt_tokens");
    r.kv.tokens_computed = get_or<uint64_t>(pt, "computed", 0);
    r.kv.tokens_context = get_or<uint64_t>(pt, "context", 0);
    r.kv.tokens_host = get_or<uint64_t>(pt, "host", 0);
    r.kv.tokens_disk = get_or<uint64_t>(pt, "disk", 0);
    if (auto l = j.find("load"); l != j.end() && l->is_object()) {
        r.load.known = true;
        r.load.running = get_or<uint64_t>(*l, "running", 0);
        r.load.queued = get_or<uint64_t>(*l, "queued", 0);
    }
    r.triage_candidate = get_or(object_at(j, "triage"), "candidate", false);
    r.updated_at = get_or<std::string>(j, "updated_at", "");
    return r;
}

std::string registration_problem(const std::string & key_id, int64_t lease, const result<host_record> & parsed) {
    if (!parsed.ok()) return "not a host record";
    if (lease == 0) return "not on a lease (agents register on theirs)";
    if (parsed->id != key_id) return "it names host '" + parsed->id + "' under the key of '" + key_id + "'";
    return "";
}

}  // namespace rc::fleet
