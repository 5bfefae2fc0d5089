#include "fleet/rollout/rollout_record.h"

#include <algorithm>
#include <cctype>
#include <random>

#include "store/timestamps.h"

namespace rc::fleet {

namespace {

using ojson = nlohmann::ordered_json;

template <typename J>
std::string str(const J & j, const char * k) {
    return j.contains(k) && j[k].is_string() ? j[k].template get<std::string>() : std::string();
}
template <typename J>
int64_t num(const J & j, const char * k, int64_t dflt) {
    return j.contains(k) && j[k].is_number_integer() ? j[k].template get<int64_t>() : dflt;
}
template <typename J>
std::vector<std::string> strings(const J & j, const char * k) {
    std::vector<std::string> out;
    if (j.contains(k) && j[k].is_array())
        for (const auto & v : j[k])
            if (v.is_string()) out.push_back(v.template get<std::string>());
    return out;
}

}  // namespace

const rollout_planned_host * rollout_record::host(const std::string & id) const {
    for (const auto & h : hosts)
        if (h.id == id) return &h;
    return nullptr;
}

int rollout_record::cohort_of(const std::string & host) const {
    for (size_t i = 0; i < cohorts.size(); ++i)
        if (std::find(cohorts[i].begin(), cohorts[i].end(), host) != cohorts[i].end()) return int(i);
    return -1;
}

ojson to_json(const rollout_record & r) {
    ojson cohorts = ojson::array();
    for (const auto & c : r.cohorts) cohorts.push_back(c);
    ojson hosts = ojson::array();
    for (const auto & h : r.hosts) hosts.push_back({{"id", h.id}, {"models", h.models}, {"from_version", h.from_version}});
    ojson slots = ojson::object();
    for (const auto & [k, v] : r.slots) slots[k] = v;
    return {{"schema", r.schema},
            {"id", r.id},
            {"version", r.spec.version},
            {"artifact", r.spec.artifact},
            {"sha256", r.spec.sha256},
            {"signature", r.spec.signature},
            {"cohort_size", r.spec.cohort_size},
            {"max_unavailable", r.spec.max_unavailable},
            {"smoke_models", r.spec.smoke_models},
            {"bake_ms", int64_t(r.spec.bake.count())},
            {"host_timeout_ms", int64_t(r.spec.host_timeout.count())},
            {"request", {{"state", r.request.state}, {"message", r.request.message}, {"at", r.request.at}}},
            {"state", r.state},
            {"message", r.message},
            {"created_at", r.created_at},
            {"created_by", r.created_by},
            {"started_at", r.started_at},
            {"finished_at", r.finished_at},
            {"driver", r.driver},
            {"cohorts", cohorts},
            {"cohort", r.cohort},
            {"cohort_started_at", r.cohort_started_at},
            {"hosts", hosts},
            {"slots", slots},
            {"notes", r.notes}};
}

result<rollout_record> parse_rollout(const std::string & text) {
    auto j = ojson::parse(text, nullptr, false);
    if (!j.is_object() || !j.contains("id") || !j["id"].is_string()) return make_error(errc::invalid_argument, "not a rollout record");
    rollout_record r;
    r.schema = int(num(j, "schema", rollout_schema));
    r.id = str(j, "id");
    r.spec.version = str(j, "version");
    r.spec.artifact = str(j, "artifact");
    r.spec.sha256 = str(j, "sha256");
    r.spec.signature = str(j, "signature");
    r.spec.cohort_size = int(num(j, "cohort_size", 1));
    r.spec.max_unavailable = int(num(j, "max_unavailable", 1));
    r.spec.smoke_models = strings(j, "smoke_models");
    r.spec.bake = std::chrono::milliseconds(num(j, "bake_ms", 60000));
    r.spec.host_timeout = std::chrono::milliseconds(num(j, "host_timeout_ms", 600000));
    if (j.contains("request") && j["request"].is_object())
        r.request = {str(j["request"], "state"), str(j["request"], "message"), str(j["request"], "at")};
    r.state = str(j, "state");
    r.message = str(j, "message");
    r.created_at = str(j, "created_at");
    r.created_by = str(j, "created_by");
    r.started_at = str(j, "started_at");
    r.finished_at = str(j, "finished_at");
    r.driver = str(j, "driver");
    if (j.contains("cohorts") && j["cohorts"].is_array())
        for (const auto & c : j["cohorts"]) {
            std::vector<std::string> ids;
            if (c.is_array())
                for (const auto & v : c)
                    if (v.is_string()) ids.push_back(v.get<std::string>());
            r.cohorts.push_back(std::move(ids));
        }
    r.cohort = int(num(j, "cohort", -1));
    r.cohort_started_at = str(j, "cohort_started_at");
    if (j.contains("hosts") && j["hosts"].is_array())
        for (const auto & h : j["hosts"])
            if (h.is_object()) r.hosts.push_back({str(h, "id"), strings(h, "models"), str(h, "from_version")});
    if (j.contains("slots") && j["slots"].is_object())
        for (const auto & [k, v] : j["slots"].items())
            if (v.is_number_integer()) r.slots[k] = v.get<int>();
    r.notes = strings(j, "notes");
    return r;
}

ojson to_json(const host_progress & p) {
    return {{"host", p.host},       {"step", p.step},       {"from_version", p.from_version}, {"message", p.message},
            {"attempts", p.attempts}, {"bake_until", p.bake_until}, {"updated_at", p.updated_at}};
}

result<host_progress> parse_host_progress(const std::string & text) {
    auto j = ojson::parse(text, nullptr, false);
    if (!j.is_object() || !j.contains("host") || !j["host"].is_string()) return make_error(errc::invalid_argument, "not a host progress record");
    host_progress p;
    p.host = str(j, "host");
    p.step = str(j, "step");
    p.from_version = str(j, "from_version");
    p.message = str(j, "message");
    p.attempts = int(num(j, "attempts", 0));
    p.bake_until = str(j, "bake_until");
    p.updated_at = str(j, "updated_at");
    return p;
}

std::string new_rollout_id() {
    static const char * hex = "0123456789abcdef";
    std::random_device rd;
    std::string tail;
    for (int i = 0; i < 4; ++i) tail += hex[rd() % 16];
    return "ro-" + store::format_compact(std::chrono::system_clock::now()) + "-" + tail;
}

bool valid_version_name(const std::string & v) {
    if (v.empty() || v.size() > 64 || v[0] == '.' || v[0] == '-') return false;
    return std::all_of(v.begin(), v.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '+' || c == '-'; });
}

std::string slot_key_name(const std::string & sem) {
    static const char * hex = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : sem) {
        if (std::isalnum(c) || c == '.' || c == '_' || c == '-' || c == ':') out += char(c);
        else out += std::string("%") + hex[c >> 4] + hex[c & 15];
    }
    return out;
}

ojson to_json(const rollout_view & v) {
    const auto & r = v.rollout;
    int done = 0, total = 0;
    ojson hosts = ojson::array();
    for (size_t c = 0; c < r.cohorts.size(); ++c)
        for (const auto & id : r.cohorts[c]) {
            ++total;
            auto it = v.progress.find(id);
            const host_progress p = it != v.progress.end() ? it->second : host_progress::at(id);
            if (p.step == "done") ++done;
            ojson h = to_json(p);
            h["cohort"] = int(c);
            hosts.push_back(std::move(h));
        }
    std::string cohort;
    if (r.cohort == 0) cohort = "canary";
    else if (r.cohort > 0) cohort = "cohort " + std::to_string(r.cohort) + " of " + std::to_string(r.cohorts.size() - 1);
    ojson out = to_json(r);
    out.erase("hosts");
    ojson head = {{"id", r.id},           {"version", r.spec.version}, {"state", r.state},     {"done", done},
                  {"total", total},        {"cohort", cohort},          {"started_at", r.started_at}, {"message", r.message}};
    for (auto & [k, val] : out.items())
        if (!head.contains(k)) head[k] = val;
    head["planned"] = to_json(r)["hosts"];
    head["hosts"] = hosts;
    return head;
}

namespace {

// Which fields live in which document.
const char * const spec_fields[] = {"schema", "id", "version", "artifact", "sha256", "signature", "cohort_size", "max_unavailable",
                                    "smoke_models", "bake_ms", "host_timeout_ms", "created_at", "created_by", "request"};
const char * const state_fields[] = {"state", "message", "started_at", "finished_at", "driver", "cohorts", "cohort", "cohort_started_at",
                                     "hosts", "slots", "notes"};

template <size_t N>
ojson pick(const ojson & from, const char * const (&fields)[N]) {
    ojson out = ojson::object();
    for (const char * f : fields)
        if (from.contains(f)) out[f] = from[f];
    return out;
}

std::string spec_doc(const rollout_record & r) { return pick(to_json(r), spec_fields).dump(); }

std::string state_doc(const rollout_record & r) {
    ojson j = pick(to_json(r), state_fields);
    j["id"] = r.id;
    if (!r.request.state.empty() && r.state == r.request.state) {  // the operator's overlay is not the driver's to store
        j["state"] = r.driver_state;
        j["message"] = r.driver_message;
        j["finished_at"] = r.driver_finished_at;
    }
    return j.dump();
}

// The operator's pause or abort laid over what the driver wrote; a done or failed rollout stays so.
void lay_request_over(rollout_record & r) {
    if (r.state.empty()) {
        r.state = "pending";
        if (r.message.empty()) r.message = "waiting for the driver to plan it";
    }
    r.driver_state = r.state;
    r.driver_message = r.message;
    r.driver_finished_at = r.finished_at;
    if (r.finished()) return;
    if (r.request.state == "aborted") {
        r.state = "aborted";
        r.message = r.request.message;
        r.finished_at = r.request.at;
    } else if (r.request.state == "paused") {
        r.state = "paused";
        r.message = r.request.message;
    }
}

result<rollout_record> record_of(etcd_client & etcd, const fleet_keys & keys, const etcd_kv & spec_kv) {
    ojson merged = ojson::parse(spec_kv.value, nullptr, false);
    if (!merged.is_object()) return make_error(errc::invalid_argument, "not a rollout record");
    merged = pick(merged, spec_fields);
    std::string id = merged.contains("id") && merged["id"].is_string() ? merged["id"].get<std::string>() : "";
    if (id.empty()) return make_error(errc::invalid_argument, "not a rollout record");
    auto state = etcd.get(keys.rollout_state(id));
    if (!state.ok()) return state.err();
    int64_t state_revision = 0;
    if (!state->kvs.empty()) {
        state_revision = state->kvs[0].mod_revision;
        ojson sj = ojson::parse(state->kvs[0].value, nullptr, false);
        if (sj.is_object()) merged.update(pick(sj, state_fields));
    }
    auto r = parse_rollout(merged.dump());
    if (!r.ok()) return r.err();
    r->spec_revision = spec_kv.mod_revision;
    r->state_revision = state_revision;
    lay_request_over(r.value());
    return r;
}

result<rollout_view> view_of(etcd_client & etcd, const fleet_keys & keys, const etcd_kv & spec_kv) {
    auto r = record_of(etcd, keys, spec_kv);
    if (!r.ok()) return r.err();
    rollout_view v{r.value(), {}};
    // Each planned host's progress sits in its own range: one transaction reads them all.
    std::vector<etcd_op> reads;
    for (const auto & h : v.rollout.hosts) reads.push_back(etcd_op::get(keys.rollout_host(v.rollout.id, h.id)));
    for (size_t at = 0; at < reads.size(); at += 100) {  // etcd's default limit is 128 operations per transaction
        std::vector<etcd_op> chunk(reads.begin() + long(at), reads.begin() + long(std::min(reads.size(), at + 100)));
        auto t = etcd.txn({}, chunk);
        if (!t.ok()) return t.err();
        for (const auto & range : t->ranges)
            for (const auto & h : range.kvs) {
                auto p = parse_host_progress(h.value);
                if (!p.ok()) continue;
                p->mod_revision = h.mod_revision;
                v.progress[p->host] = p.value();
            }
    }
    return v;
}

result<etcd_kv> spec_kv_of(etcd_client & etcd, const fleet_keys & keys, const std::string & id) {
    auto doc = etcd.get(keys.rollout(id));
    if (!doc.ok()) return doc.err();
    if (doc->kvs.empty()) return make_error(errc::not_found, "no rollout '" + id + "'");
    return doc->kvs[0];
}

}  // namespace

result<rollout_view> read_rollout(etcd_client & etcd, const fleet_keys & keys, const std::string & id) {
    std::string want = id;
    if (want.empty()) {
        auto active = etcd.get(keys.rollout_active());
        if (!active.ok()) return active.err();
        if (!active->kvs.empty()) want = active->kvs[0].value;
    }
    if (want.empty()) {
        auto all = read_rollouts(etcd, keys, 1);
        if (!all.ok()) return all.err();
        if (all->empty()) return make_error(errc::not_found, "no rollout yet: start one with `rustycage fleet upgrade`");
        return all->front();
    }
    auto kv = spec_kv_of(etcd, keys, want);
    if (!kv.ok()) return kv.err();
    return view_of(etcd, keys, kv.value());
}

result<rollout_record> read_rollout_record(etcd_client & etcd, const fleet_keys & keys, const std::string & id) {
    auto kv = spec_kv_of(etcd, keys, id);
    if (!kv.ok()) return kv.err();
    return record_of(etcd, keys, kv.value());
}

result<std::vector<rollout_view>> read_rollouts(etcd_client & etcd, const fleet_keys & keys, size_t limit) {
    auto all = etcd.get_prefix(keys.rollouts());
    if (!all.ok()) return all.err();
    std::vector<etcd_kv> docs;
    for (const auto & kv : all->kvs)
        if (!fleet_keys::tail(kv.key, keys.rollouts()).empty()) docs.push_back(kv);
    // Newest first by etcd's own creation order: ids carry a wall-clock second, which neither orders
    // two rollouts of the same second nor two operators' clocks.
    std::sort(docs.begin(), docs.end(), [](const etcd_kv & a, const etcd_kv & b) { return a.create_revision > b.create_revision; });
    std::vector<rollout_view> out;
    for (const auto & kv : docs) {
        if (out.size() >= limit) break;
        auto v = view_of(etcd, keys, kv);
        if (v.ok()) out.push_back(std::move(v.value()));
        else if (v.err().code == errc::unavailable) return v.err();
    }
    return out;
}

result<bool> create_rollout(etcd_client & etcd, const fleet_keys & keys, const rollout_record & r) {
    // The active one may be replaced only once it has finished: compare on the revision it was read at.
    auto active = etcd.get(keys.rollout_active());
    if (!active.ok()) return active.err();
    std::vector<etcd_compare> cmp = {etcd_compare::absent(keys.rollout(r.id))};
    if (active->kvs.empty()) {
        cmp.push_back(etcd_compare::absent(keys.rollout_active()));
    } else {
        auto current = read_rollout_record(etcd, keys, active->kvs[0].value);
        if (current.ok() && !current->finished()) return false;
        if (!current.ok() && current.err().code != errc::not_found) return current.err();
        cmp.push_back(etcd_compare::mod_revision_is(keys.rollout_active(), active->kvs[0].mod_revision));
    }
    auto t = etcd.txn(cmp, {etcd_op::put(keys.rollout(r.id), spec_doc(r)), etcd_op::put(keys.rollout_active(), r.id)});
    if (!t.ok()) return t.err();
    return t->succeeded;
}

result<bool> request_rollout(etcd_client & etcd, const fleet_keys & keys, const rollout_record & r) {
    auto t = etcd.txn({etcd_compare::mod_revision_is(keys.rollout(r.id), r.spec_revision)}, {etcd_op::put(keys.rollout(r.id), spec_doc(r))});
    if (!t.ok()) return t.err();
    return t->succeeded;
}

result<bool> write_rollout_state(etcd_client & etcd, const fleet_keys & keys, const rollout_record & r) {
    const std::string state_key = keys.rollout_state(r.id);
    auto t = etcd.txn({etcd_compare::mod_revision_is(keys.rollout(r.id), r.spec_revision),
                       r.state_revision == 0 ? etcd_compare::absent(state_key) : etcd_compare::mod_revision_is(state_key, r.state_revision)},
                      {etcd_op::put(state_key, state_doc(r))});
    if (!t.ok()) return t.err();
    return t->succeeded;
}

}  // namespace rc::fleet
