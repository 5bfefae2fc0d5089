#include "fleet/agent/agent.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <regex>
#include <thread>

#include "fleet/rollout/artifact_signature.h"
#include "fleet/host/host_claim.h"
#include "fleet/host/server_secrets.h"
#include "http/http_client.h"
#include "fleet/rollout/rollout_artifact.h"
#include "models/local_catalog.h"
#include "store/timestamps.h"
#include "util/log.h"
#include "store/model_name.h"

namespace rc::fleet {

namespace {

using ojson = nlohmann::ordered_json;
using steady = std::chrono::steady_clock;

std::string now_text() { return store::format_rfc3339(std::chrono::system_clock::now()); }

}  // namespace

agent::agent(agent_options opts) : opts_(std::move(opts)) { keys_.prefix = opts_.prefix; }

agent::~agent() {
    if (lock_fd_ >= 0) close(lock_fd_);
}

void agent::stop() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stopping_ = true;
    }
    cv_.notify_all();
}

bool agent::wait(std::chrono::milliseconds d, bool wake_on_republish) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, d, [&] { return stopping_.load() || (wake_on_republish && republish_.load()); });
}

std::string agent::advertised(const std::string & url) const {
    if (opts_.advertise_host.empty() || url.empty()) return url;
    static const std::regex host_re(R"(^(https?://)([^/:]+|\[[^\]]+\])(:\d+.*)$)");
    return std::regex_replace(url, host_re, "$1" + opts_.advertise_host + "$3");
}

host_record agent::build_record() {
    host_record r;
    r.id = opts_.host_id;
    r.agent_pid = static_cast<int>(getpid());
    r.agent_version = opts_.version;
    r.agent_started_at = started_at_;
    r.version = opts_.version;
    r.llama_commit = opts_.llama_commit;
    r.backend = hardware_.backend;
    r.devices = hardware_.devices;
    r.memory_total = hardware_.memory_total;
    r.memory_available = hardware_.memory_available;
    r.triage_candidate = triager_ != nullptr;
    const supervisor_snapshot sup = supervisor_->snapshot();
    r.openai_url = advertised(sup.openai_url);
    r.ollama_url = advertised(sup.ollama_url);
    std::lock_guard<std::mutex> lock(mu_);
    const server_snapshot & s = last_snapshot_;
    if (!s.version.empty()) r.version = s.version;
    if (!s.llama_commit.empty()) r.llama_commit = s.llama_commit;
    r.build_info = s.build_info;
    r.server.state = sup.state;
    r.server.ready = sup.state == "ready" && sup.pid > 0 && s.health.ready;
    if (sup.state == "ready" && !s.health.ready) r.server.state = "unresponsive";
    r.server.pid = sup.pid;
    r.server.restarts = sup.restarts;
    r.server.since = store::format_rfc3339(sup.since);
    r.server.last_exit = sup.last_exit;
    r.models = s.models;
    r.kv = s.kv;
    r.load = s.load;
    return r;
}

std::filesystem::path agent::lease_file() const { return opts_.data_dir / "fleet-lease"; }

result<std::string> agent::foreign_holder() { return host_id_holder(*etcd_, keys_, opts_.host_id, lease_file()); }

status agent::claim_host_id() {
    for (bool waiting = false;;) {
        auto who = foreign_holder();
        if (!who.ok() || who->empty()) return {};  // free, ours, or etcd away (registration claims it later)
        if (!opts_.takeover)
            return make_error(errc::invalid_argument, "host id '" + opts_.host_id + "' is held by " + who.value() +
                                                          "; stop that agent, give this one another --host-id, or pass --takeover to wait for its lease to lapse");
        if (!waiting) rc::log::warn("fleet", "waiting_for_host_id", {{"host", opts_.host_id}, {"holder", who.value()}});
        waiting = true;
        if (wait(std::chrono::milliseconds(500), false)) return make_error(errc::unavailable, "stopped while waiting for host id '" + opts_.host_id + "'");
    }
}

status agent::register_host() {
    auto lease = etcd_->grant(opts_.heartbeat_ttl);
    if (!lease.ok()) return lease.err();
    (void) etcd_->put(keys_.schema(), std::to_string(fleet_schema_version));
    host_record rec = build_record();
    rec.updated_at = now_text();
    auto claim = claim_host_id_key(*etcd_, keys_, opts_.host_id, to_json(rec).dump(), lease.value(), lease_file());
    if (!claim.ok() || !claim->holder.empty()) {
        if (claim.ok() && !id_taken_)
            rc::log::error("fleet", "host_id_taken", {{"host", opts_.host_id}, {"holder", claim->holder},
                                                      {"note", "serving on unregistered; retrying until its lease lapses"}});
        id_taken_ = claim.ok();
        (void) etcd_->revoke(lease.value());
        return claim.ok() ? make_error(errc::unavailable, "host id " + opts_.host_id + " is held by " + claim->holder) : claim.err();
    }
    id_taken_ = false;
    std::string first_seen = now_text();
    if (auto old = etcd_->get(keys_.roster_entry(opts_.host_id)); old.ok() && !old->kvs.empty()) {
        auto j = ojson::parse(old->kvs[0].value, nullptr, false);
        if (j.is_object() && j.contains("first_seen") && j["first_seen"].is_string()) first_seen = j["first_seen"].get<std::string>();
    }
    const ojson roster = {{"id", opts_.host_id}, {"first_seen", first_seen}, {"last_registered", now_text()}, {"left_at", ""}};
    (void) etcd_->put(keys_.roster_entry(opts_.host_id), roster.dump());
    lease_ = lease.value();
    peers_->lease_changed();
    rc::log::info("fleet", "registered", {{"host", opts_.host_id}, {"lease", lease.value()}, {"ttl_s", int64_t(opts_.heartbeat_ttl.count())}});
    return {};
}

void agent::heartbeat_loop() {
    const auto interval = std::max<std::chrono::milliseconds>(std::chrono::milliseconds(100), opts_.heartbeat_ttl / 3);
    bool outage = false;
    ojson last;
    auto last_publish = steady::now();
    auto last_sync = steady::now();
    while (!stopping_) {
        if (!outage && steady::now() - last_sync > std::chrono::seconds(30)) {
            last_sync = steady::now();
            (void) etcd_->sync_members();  // members added to the cluster since
        }
        if (lease_ == 0) {
            if (auto registered = register_host(); registered.ok()) {
                if (outage) rc::log::info("fleet", "etcd_reachable", {{"host", opts_.host_id}});
                outage = false;
                republish_ = false;
                last_publish = steady::now();
            } else {
                // etcd's own words ("etcdserver: mvcc: database space exceeded" during a NOSPACE
                // alarm): an operator must see why, not only that.
                if (!outage && !id_taken_)
                    rc::log::warn("fleet", "etcd_unreachable", {{"host", opts_.host_id}, {"error", registered.err().message},
                                                                {"note", "serving on; will register when etcd answers"}});
                outage = true;
                wait(std::min<std::chrono::milliseconds>(interval, std::chrono::milliseconds(1000)), false);
                continue;
            }
        } else {
            auto ka = etcd_->keepalive(lease_);
            if (!ka.ok()) {
                if (!outage) rc::log::warn("fleet", "etcd_unreachable", {{"host", opts_.host_id}, {"error", ka.err().message}});
                outage = true;
            } else if (ka.value() == 0) {
                rc::log::warn("fleet", "lease_lost", {{"host", opts_.host_id}, {"lease", lease_.load()}});
                lease_ = 0;
                continue;
            } else if (outage) {
                rc::log::info("fleet", "etcd_reachable", {{"host", opts_.host_id}});
                outage = false;
                republish_ = true;
            }
            if (!outage) {
                host_record rec = build_record();
                ojson j = to_json(rec);
                if (republish_ || j != last || steady::now() - last_publish >= opts_.publish_interval) {
                    republish_ = false;
                    rec.updated_at = now_text();
                    auto put = etcd_->put(keys_.host(opts_.host_id), to_json(rec).dump(), lease_);
                    if (put.ok()) {
                        last = j;
                        last_publish = steady::now();
                    } else if (put.err().code == errc::not_found) {
                        lease_ = 0;  // etcd forgot the lease: register anew
                        continue;
                    }
                }
            }
        }
        wait(interval, !outage);
    }
}

void agent::probe_loop() {
    while (!stopping_) {
        const supervisor_snapshot sup = supervisor_->snapshot();
        server_snapshot snap;
        if (!sup.openai_url.empty() && (sup.state == "ready" || sup.state == "starting")) snap = probe_server(sup.openai_url, opts_.probe_timeout, opts_.api_key);
        // Quarantine status comes from the store itself: /api/tags lists servable models only.
        std::vector<model_fact> models;
        for (const auto & e : models::local_catalog(opts_.models_dir).list()) {
            model_fact m{e.name, e.digest, std::string(store::to_string(e.status)), false, e.size_bytes};
            for (const auto & served : snap.models) {
                if (store::same_model_name(served.name, e.name)) {
                    m.loaded = served.loaded;
                    if (m.digest.empty()) m.digest = served.digest;
                }
            }
            models.push_back(std::move(m));
        }
        snap.models = std::move(models);
        bool changed;
        {
            std::lock_guard<std::mutex> lock(mu_);
            changed = snap.health.ready != last_snapshot_.health.ready;
            last_snapshot_ = snap;
        }
        if (changed) {
            republish_ = true;
            cv_.notify_all();
        }
        if (sup.state == "ready") check_server(snap);
        if (smoke_pending_ && snap.health.ready) {
            smoke_pending_ = false;
            smoke_test(sup.openai_url);
        }
        peers_->probe_once();
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait_for(lock, opts_.probe_interval, [&] { return stopping_.load(); });
    }
}

void agent::incident_loop() {
    bool failing = false;
    while (!stopping_) {
        auto r = incidents_->publish_once();
        if (!r.ok() && !failing) rc::log::warn("fleet", "incidents_not_published", {{"error", r.err().message}, {"note", "kept locally; retrying"}});
        failing = !r.ok();
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait_for(lock, std::chrono::milliseconds(500), [&] { return stopping_.load(); });
    }
}

std::vector<host_record> agent::healthy_hosts() const {
    std::vector<host_record> self, others;
    for (const auto & p : peers_->peers()) {
        if (!p.registered || !p.record || !p.record->server.ready) continue;
        if (p.id == opts_.host_id) self.push_back(*p.record);
        else if (p.state == "up") others.push_back(*p.record);
    }
    self.insert(self.end(), others.begin(), others.end());
    return self;
}

status agent::run() {
    if (!valid_host_id(opts_.host_id))
        return make_error(errc::invalid_argument, "--host-id '" + opts_.host_id + "' must be 1-63 of A-Z a-z 0-9 . _ - (not starting with . or -)");
    if (!valid_fleet_prefix(opts_.prefix)) return make_error(errc::invalid_argument, "--etcd-prefix '" + opts_.prefix + "' must end in '/'");
    if (opts_.etcd.endpoints.empty()) return make_error(errc::invalid_argument, "no etcd endpoint (--etcd)");
    if (!opts_.github.repo.empty() && !valid_github_repo(opts_.github.repo))
        return make_error(errc::invalid_argument, "--github-repo '" + opts_.github.repo + "' is not owner/name");
    std::error_code ec;
    std::filesystem::create_directories(opts_.data_dir, ec);
    std::filesystem::create_directories(opts_.models_dir, ec);
    lock_fd_ = ::open((opts_.data_dir / "agent.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock_fd_ < 0) return make_error(errc::io, "cannot use the data directory " + opts_.data_dir.string());
    if (flock(lock_fd_, LOCK_EX | LOCK_NB) != 0)
        return make_error(errc::io, "another agent runs with the data directory " + opts_.data_dir.string());
    // After the lock: a second agent refused above must not rewrite the running server's keys.
    auto key_file = write_server_key_file(opts_.data_dir, opts_.server_api_keys);
    if (!key_file.ok()) return make_error(key_file.err().code, key_file.err().message + " (the server's API keys)");
    if (!key_file->empty()) opts_.server.argv.insert(opts_.server.argv.end(), {"--api-key-file", key_file->string()});

    if (!opts_.trusted_keys.empty()) {
        auto keys = load_trusted_keys(opts_.trusted_keys);
        if (!keys.ok()) return make_error(errc::invalid_argument, keys.err().message + " (--trusted-keys)");
        std::string ids;
        for (const auto & k : keys.value()) ids += (ids.empty() ? "" : ",") + k.id;
        rc::log::info("fleet", "trusted_keys", {{"file", opts_.trusted_keys.string()}, {"keys", ids}});
    } else if (opts_.allow_unsigned_artifacts) {
        rc::log::warn("fleet", "unsigned_artifacts_allowed", {{"note", "--allow-unsigned-artifacts: any rollout's artifact will run here (development only)"}});
    } else {
        rc::log::warn("fleet", "no_trusted_keys", {{"note", "no --trusted-keys: this host refuses every rollout"}});
    }
    started_at_ = now_text();
    hardware_ = read_hardware();
    const ojson versions = {{"rustycage", opts_.version}, {"llama_commit", opts_.llama_commit}, {"backend", hardware_.backend}};
    const std::string self_binary = opts_.server.argv.empty() ? std::string() : opts_.server.argv[0];
    // A restarted agent waits for its previous server (still draining, holding the ports) before it
    // starts a new one, instead of three bind failures and a false crash loop.
    opts_.server.pid_file = (opts_.data_dir / "server.pid").string();
    if (auto installed = installed_server_binary(opts_.data_dir); installed && !opts_.server.argv.empty()) {
        opts_.server.argv[0] = installed->string();
        rc::log::info("fleet", "server_binary", {{"path", installed->string()}, {"from", "versions/current"}});
    }
    etcd_ = std::make_unique<etcd_gateway>(opts_.etcd);
    if (auto added = etcd_->sync_members(); added.ok() && added.value() > 0)
        rc::log::info("fleet", "etcd_members", {{"learned", int64_t(added.value())}, {"endpoints", int64_t(etcd_->endpoints().size())}});
    if (auto st = claim_host_id(); !st) return st;
    peers_ = std::make_unique<peer_monitor>(*etcd_, keys_, opts_.host_id, opts_.probe_timeout, [this] { return lease_.load(); });
    incidents_ = std::make_unique<incident_publisher>(*etcd_, keys_, opts_.host_id, opts_.models_dir, opts_.data_dir, versions, to_json(hardware_));
    supervisor_ = std::make_unique<supervisor>(
        opts_.server, [this](const supervisor_event & ev) { on_server_event(ev); });
    if (!opts_.github.repo.empty()) {
        if (opts_.github.token.empty()) rc::log::warn("fleet", "github_token_missing", {{"note", "GITHUB_TOKEN is not set; GitHub will refuse to file"}});
        github_ = std::make_unique<github_rest_client>(opts_.github);
        triager_options t;
        t.host = opts_.host_id;
        t.triage_model = opts_.triage_model;
        t.triage_timeout = opts_.triage_timeout;
        t.outbox = opts_.outbox;
        t.api_key = opts_.api_key;
        triager_ = std::make_unique<triager>(*etcd_, *github_, keys_, t, [this] { return lease_.load(); }, [this] { return healthy_hosts(); });
    }
    rollout_host_options ro;
    ro.host = opts_.host_id;
    ro.data_dir = opts_.data_dir;
    ro.api_key = opts_.api_key;
    ro.self_version = opts_.version;
    ro.self_binary = self_binary;
    ro.trusted_keys = opts_.trusted_keys;
    ro.allow_unsigned = opts_.allow_unsigned_artifacts;
    ro.ready_timeout = opts_.rollout_ready_timeout;
    rollout_host_hooks hooks;
    hooks.lease = [this] { return lease_.load(); };
    hooks.loaded_models = [this] {
        std::vector<std::string> out;
        std::lock_guard<std::mutex> lock(mu_);
        for (const auto & m : last_snapshot_.models)
            if (m.loaded && m.status == "ready") out.push_back(m.name);
        return out;
    };
    hooks.ready_models = [this] {
        std::vector<std::string> out;
        for (const auto & e : models::local_catalog(opts_.models_dir).list())
            if (e.status == store::model_status::ready) out.push_back(e.name);
        return out;
    };
    hooks.incident = [this](const std::string & kind, const std::string & model, const std::string & reason, ojson evidence) {
        incidents_->record(kind, model, "", reason, std::move(evidence));
    };
    hooks.republish = [this] {
        republish_ = true;
        cv_.notify_all();
    };
    rollout_ = std::make_unique<rollout_host>(*etcd_, keys_, ro, *supervisor_, hooks);
    rollout_driver_ = std::make_unique<rollout_driver>(*etcd_, keys_, opts_.host_id, [this] { return lease_.load(); });
    rc::log::info("fleet", "agent_starting", {{"host", opts_.host_id}, {"etcd", opts_.etcd.endpoints.front()}, {"triager", triager_ != nullptr}});

    auto stop_requested = [this] { return stopping_.load(); };
    std::thread sup([this] { supervisor_->run(); });
    std::thread hb([this] { heartbeat_loop(); });
    std::thread watch([this, stop_requested] { peers_->run_watch(stop_requested); });
    std::thread probe([this] { probe_loop(); });
    std::thread inc([this] { incident_loop(); });
    std::thread tri;
    if (triager_) tri = std::thread([this, stop_requested] { triager_->run(stop_requested); });
    std::thread roll([this, stop_requested] { rollout_->run(stop_requested); });
    std::thread drive([this, stop_requested] { rollout_driver_->run(stop_requested); });

    {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stopping_.load(); });
    }
    rc::log::info("fleet", "agent_stopping", {{"host", opts_.host_id}});
    roll.join();  // before the supervisor stops: a host mid-step leaves its progress for the next life
    drive.join();
    supervisor_->stop();
    sup.join();
    remove_server_key_file(opts_.data_dir);  // no server left to read it: no key at rest
    probe.join();
    inc.join();
    (void) incidents_->publish_once();  // what the drain produced
    if (tri.joinable()) tri.join();
    watch.join();
    hb.join();
    if (const int64_t lease = lease_.exchange(0); lease != 0) {
        // The roster says "left" before the lease goes: an agent that takes the id over afterwards
        // writes its own roster entry last.
        ojson roster = {{"id", opts_.host_id}, {"last_registered", started_at_}, {"left_at", now_text()}};
        if (auto old = etcd_->get(keys_.roster_entry(opts_.host_id)); old.ok() && !old->kvs.empty()) {
            auto j = ojson::parse(old->kvs[0].value, nullptr, false);
            if (j.is_object()) {
                j["left_at"] = now_text();
                roster = j;
            }
        }
        (void) etcd_->put(keys_.roster_entry(opts_.host_id), roster.dump());
        (void) etcd_->revoke(lease);
    }
    rc::log::info("fleet", "agent_stopped", {{"host", opts_.host_id}});
    return {};
}

}  // namespace rc::fleet
