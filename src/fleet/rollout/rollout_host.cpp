#include "fleet/rollout/rollout_host.h"

#include <algorithm>
#include <thread>

#include "fleet/host/host_record.h"
#include "http/http_client.h"
#include "fleet/rollout/rollout_artifact.h"
#include "fleet/rollout/rollout_plan.h"
#include "fleet/rollout/rollout_slots.h"
#include "fleet/rollout/rollout_smoke.h"
#include "fleet/host/server_probe.h"
#include "store/timestamps.h"
#include "util/log.h"
#include "store/model_name.h"

namespace rc::fleet {

namespace {

using ojson = nlohmann::ordered_json;
using steady = std::chrono::steady_clock;
namespace fs = std::filesystem;

std::string now_text() { return store::format_rfc3339(std::chrono::system_clock::now()); }

ojson lines_json(const std::vector<std::string> & lines) {
    ojson a = ojson::array();
    for (const auto & l : lines) a.push_back(l);
    return a;
}

uint64_t count_5xx(const std::string & url, std::chrono::milliseconds timeout) {
    http::client_request req;
    req.url = url + "/metrics";
    req.timeout = timeout;
    auto r = http::call(req);
    if (!r.ok() || r->status != 200) return 0;
    uint64_t n = 0;
    for (const auto & s : parse_prometheus_text(r->body)) {
        if (s.name != "rustycage_requests_total") continue;
        auto st = s.labels.find("status");
        if (st != s.labels.end() && st->second.starts_with("5")) n += uint64_t(s.value);
    }
    return n;
}

}  // namespace

std::vector<std::string> side_port_args(const std::vector<std::string> & serve_args) {
    std::vector<std::string> out;
    bool openai = false, ollama = false;
    for (size_t i = 0; i < serve_args.size(); ++i) {
        const std::string & a = serve_args[i];
        for (const char * flag : {"--openai-port", "--ollama-port"}) {
            const std::string f = flag;
            if (a == f || a.starts_with(f + "=")) (f == "--openai-port" ? openai : ollama) = true;
        }
        if ((a == "--openai-port" || a == "--ollama-port") && i + 1 < serve_args.size()) {
            out.insert(out.end(), {a, "0"});
            ++i;
        } else if (a.starts_with("--openai-port=") || a.starts_with("--ollama-port=")) {
            out.push_back(a.substr(0, a.find('=')) + "=0");
        } else {
            out.push_back(a);
        }
    }
    if (!openai) out.insert(out.end(), {"--openai-port", "0"});
    if (!ollama) out.insert(out.end(), {"--ollama-port", "0"});
    return out;
}

rollout_host::rollout_host(etcd_client & etcd, fleet_keys keys, rollout_host_options opts, supervisor & main, rollout_host_hooks hooks)
    : etcd_(etcd), keys_(std::move(keys)), opts_(std::move(opts)), main_(main), hooks_(std::move(hooks)) {}

bool rollout_host::write(const rollout_record & r, host_progress & p, const std::string & step, const std::string & message, const stop_fn & should_stop) {
    p.host = opts_.host;
    p.step = step;
    p.message = message;
    p.updated_at = now_text();
    if (!put_until_taken(etcd_, keys_.rollout_host(r.id, opts_.host), to_json(p).dump(), should_stop, opts_.poll)) return false;
    rc::log::info("fleet", "rollout_step", {{"rollout", r.id}, {"host", opts_.host}, {"step", step}, {"message", message}});
    return true;
}

rollout_host::gate rollout_host::wait_gate(const rollout_record & r, const stop_fn & should_stop) {
    while (!should_stop()) {
        auto now = read_rollout_record(etcd_, keys_, r.id);
        if (now.ok()) {
            if (now->finished()) return gate::stop;
            if (now->state == "running") return gate::go;
        } else if (now.err().code == errc::not_found || now.err().code == errc::invalid_argument) {
            return gate::stop;  // gone or unreadable
        }
        pause_unless_stopped(should_stop, opts_.poll);  // paused, or etcd away: wait
    }
    return gate::stop;
}

std::vector<std::string> rollout_host::smoke_models(const rollout_record & r) const {
    const std::vector<std::string> ready = hooks_.ready_models();
    auto has = [&](const std::string & m) {
        return std::any_of(ready.begin(), ready.end(), [&](const std::string & x) { return store::same_model_name(x, m); });
    };
    std::vector<std::string> out;
    for (const auto & m : r.spec.smoke_models)
        if (has(m)) out.push_back(m);
    if (!r.spec.smoke_models.empty()) return out;  // asked for: only those (a host without them smokes ready + metrics)
    out = hooks_.loaded_models();
    if (out.empty() && !ready.empty()) out.push_back(*std::min_element(ready.begin(), ready.end()));
    return out;
}

rollout_host::outcome rollout_host::fail(const rollout_record & r, host_progress & p, const std::string & why, const std::string & kind, ojson evidence) {
    if (stop_()) return {};  // the agent is stopping: not this host's failure; the next life resumes
    if (!evidence.is_object()) evidence = ojson::object();
    evidence["error"] = why;
    evidence["rollout"] = r.id;
    evidence["from_version"] = p.from_version;
    evidence["to_version"] = r.spec.version;
    evidence["artifact_sha256"] = r.spec.sha256;
    hooks_.incident(kind, "", "rollout to " + r.spec.version + ": " + why, evidence);
    return {"failed", why};
}

std::string rollout_host::wait_new_server(uint64_t generation) {
    const auto until = steady::now() + opts_.ready_timeout;
    while (steady::now() < until && !stop_()) {
        const auto s = main_.snapshot();
        if (s.generation > generation) {
            if (s.state == "ready") return "";
            if (s.generation > generation + 1 || s.state == "backoff" || s.state == "crash_loop")
                return "the new server exited before it was ready (" + (s.last_exit.empty() ? s.state : s.last_exit) + ")";
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return "the new server was not ready within " + std::to_string(opts_.ready_timeout.count() / 1000) + " s";
}

std::string rollout_host::side_test(const rollout_record & r, const fs::path & version_dir, const std::vector<std::string> & models,
                                    std::vector<std::string> & tail) {
    const auto main_argv = main_.argv();
    supervisor_options so;
    so.argv = {(version_dir / "bin" / "rustycage").string(), "serve"};
    const auto side = side_port_args(std::vector<std::string>(main_argv.begin() + std::min<size_t>(2, main_argv.size()), main_argv.end()));
    so.argv.insert(so.argv.end(), side.begin(), side.end());
    so.initial_backoff = so.max_backoff = std::chrono::hours(1);  // one start: an exit is the verdict
    so.crash_loop_after = 100;
    so.drain_timeout = std::chrono::milliseconds(10000);
    so.forward_output = false;
    std::mutex mu;
    std::string exited;
    supervisor s(so, [&](const supervisor_event & ev) {
        if (ev.what != supervisor_event::kind::exited) return;
        std::lock_guard<std::mutex> lock(mu);
        exited = ev.exit_description;
    });
    std::thread t([&] { s.run(); });
    std::string why;
    const auto until = steady::now() + opts_.ready_timeout;
    for (;;) {
        {
            std::lock_guard<std::mutex> lock(mu);
            if (!exited.empty()) {
                why = "smoke test on side ports failed: the new server exited before it was ready (" + exited + ")";
                break;
            }
        }
        const auto snap = s.snapshot();
        if (snap.state == "ready") {
            const auto rep = smoke_server(snap.openai_url, models, opts_.api_key, opts_.smoke_timeout);
            if (!rep.passed) why = "smoke test on side ports failed at " + rep.failure;
            break;
        }
        if (stop_()) {
            why = "the agent is stopping";
            break;
        }
        if (steady::now() > until) {
            why = "smoke test on side ports failed: the new server was not ready within " + std::to_string(opts_.ready_timeout.count() / 1000) + " s";
            if (!snap.openai_url.empty())
                if (auto p = probe_ready(snap.openai_url, opts_.smoke_timeout); !p.error.empty()) why += " (" + p.error + ")";
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    tail = s.tail(40);
    s.stop();
    t.join();
    (void) r;
    return why;
}

bool rollout_host::take_slots(const rollout_record & r, host_progress & p, const stop_fn & should_stop) {
    rollout_slots slots(etcd_, keys_, r.id, opts_.host);
    const auto sems = slots_for(r, opts_.host);
    const rollout_planned_host * me = r.host(opts_.host);
    // Never the last one: each of this host's models must be served by another host that is ready
    // and not itself cutting over (the model semaphore's holders are those).
    auto admit = [&](const slot_holders & held, std::string & why) {
        if (!me) return true;
        auto hosts = etcd_.get_prefix(keys_.hosts());
        if (!hosts.ok()) {
            why = "cannot read the hosts: " + hosts.err().message;
            return false;
        }
        for (size_t i = 1; i < sems.size(); ++i) {
            const std::string model = sems[i].first.substr(std::string("model:").size());
            bool elsewhere = false, sole = true;
            for (const auto & h : r.hosts) {
                if (h.id == opts_.host || std::find(h.models.begin(), h.models.end(), model) == h.models.end()) continue;
                sole = false;
                if (std::find(held.holders[i].begin(), held.holders[i].end(), h.id) != held.holders[i].end()) continue;
                for (const auto & kv : hosts->kvs) {
                    auto rec = parse_host_record(kv.value);
                    if (rec.ok() && rec->id == h.id && rec->server.ready) elsewhere = true;
                }
            }
            if (!sole && !elsewhere) {
                why = "`" + model + "` has no other serving host right now";
                return false;
            }
        }
        return true;
    };
    std::string last_why;
    while (!should_stop()) {
        if (wait_gate(r, should_stop) != gate::go) return false;
        std::string why;
        auto got = slots.try_acquire(sems, hooks_.lease(), why, admit);
        if (got.ok() && got.value()) return true;
        if (!got.ok()) why = got.err().message;
        if (why != last_why) {
            last_why = why;
            write(r, p, "waiting_slot", why, should_stop);
        }
        pause_unless_stopped(should_stop, opts_.poll);
    }
    return false;
}

std::string rollout_host::bake(const rollout_record & r, const stop_fn & should_stop) {
    const auto start = main_.snapshot();
    const uint64_t base = count_5xx(start.openai_url, opts_.smoke_timeout);
    const auto until = steady::now() + r.spec.bake;
    while (!should_stop()) {
        const auto s = main_.snapshot();
        if (s.generation != start.generation || s.pid != start.pid)
            return "the new server exited during the bake (" + (s.last_exit.empty() ? s.state : s.last_exit) + ")";
        const uint64_t n = count_5xx(s.openai_url, opts_.smoke_timeout);
        if (n > base) return std::to_string(n - base) + " 5xx answer(s) during the bake";
        if (steady::now() >= until) return "";
        pause_unless_stopped(should_stop, std::min<std::chrono::milliseconds>(std::chrono::milliseconds(250), r.spec.bake));
    }
    return "";
}

rollout_host::outcome rollout_host::roll_back(const rollout_record & r, host_progress & p, const std::vector<std::string> & argv,
                                              const std::string & link, const std::string & why, const std::string & kind) {
    if (stop_()) return {};
    rc::log::warn("fleet", "rollout_rolling_back", {{"rollout", r.id}, {"host", opts_.host}, {"reason", why}});
    const auto tail = main_.tail(40);
    (void) set_version_link(opts_.data_dir, "current", link);  // before the restart: a crash now comes back on the old one
    const uint64_t gen = main_.snapshot().generation;
    main_.restart_with(argv);
    if (hooks_.republish) hooks_.republish();
    const std::string back = wait_new_server(gen);
    (void) rollout_slots(etcd_, keys_, r.id, opts_.host).release(slots_for(r, opts_.host));
    outcome o = fail(r, p, why, kind, {{"log_tail", lines_json(tail)}, {"rolled_back_to", p.from_version}, {"rollback", back.empty() ? "serving" : back}});
    o.step = "rolled_back";
    o.message = why + "; rolled back to " + p.from_version + (back.empty() ? "" : " (" + back + ")");
    return o;
}

rollout_host::outcome rollout_host::finish_switched(const rollout_record & r, host_progress & p, const std::vector<std::string> & rollback_argv,
                                                    const std::string & rollback_link, const stop_fn & should_stop) {
    const auto until = std::chrono::system_clock::now() + r.spec.bake;
    p.bake_until = store::format_rfc3339(until);
    if (!write(r, p, "baking", "watching for crashes and 5xx for " + std::to_string(r.spec.bake.count()) + " ms", should_stop)) return {};
    (void) rollout_slots(etcd_, keys_, r.id, opts_.host).release(slots_for(r, opts_.host));
    if (auto why = bake(r, should_stop); !why.empty()) return roll_back(r, p, rollback_argv, rollback_link, why, "rollout_failed");
    if (should_stop()) return {};
    // Done means the server says so: its own /v1/metadata reports the version rolled out.
    const std::string runs = probe_server(main_.snapshot().openai_url, opts_.smoke_timeout, opts_.api_key).version;
    if (runs != r.spec.version)
        return roll_back(r, p, rollback_argv, rollback_link, "the new server reports version '" + runs + "', not " + r.spec.version, "rollout_failed");
    prune_versions(opts_.data_dir);
    return {"done", "runs " + r.spec.version};
}

rollout_host::outcome rollout_host::upgrade(const rollout_record & r, host_progress & p, const stop_fn & should_stop) {
    const auto current = linked_version(opts_.data_dir, "current");
    const std::string running = current ? *current : opts_.self_version;
    const bool resumed = p.step != "pending";
    ++p.attempts;
    if (p.from_version.empty()) p.from_version = running;
    // The argv to roll back to: what the previous version runs with these serve flags.
    std::vector<std::string> rollback_argv = main_.argv();
    const auto previous = linked_version(opts_.data_dir, "previous");
    const std::string previous_link = resumed && current == r.spec.version ? (previous ? *previous : "") : (current ? *current : "");
    if (resumed && current == r.spec.version && (p.step == "cutover" || p.step == "smoke" || p.step == "baking")) {
        // This agent died after switching current: it came back on the new version. Smoke what runs.
        rollback_argv[0] = previous ? (versions_dir(opts_.data_dir) / *previous / "bin" / "rustycage").string() : opts_.self_binary;
        write(r, p, "smoke", "came back on " + r.spec.version + " after a restart mid-" + p.step + "; smoke-testing it", should_stop);
        if (auto why = wait_new_server(0); !why.empty()) return roll_back(r, p, rollback_argv, previous_link, why, "rollout_failed");
        const auto rep = smoke_server(main_.snapshot().openai_url, smoke_models(r), opts_.api_key, opts_.smoke_timeout);
        if (!rep.passed) return roll_back(r, p, rollback_argv, previous_link, "smoke test failed at " + rep.failure, "smoke_test_failed");
        return finish_switched(r, p, rollback_argv, previous_link, should_stop);
    }
    if (resumed) {
        rc::log::warn("fleet", "rollout_resumed", {{"rollout", r.id}, {"host", opts_.host}, {"interrupted", p.step}, {"attempt", p.attempts}});
        if (p.attempts > 3) return {"failed", "gave up after 3 attempts; the last one was interrupted during " + p.step + " (this host runs " + running + ")"};
    }

    if (!write(r, p, "downloading", r.spec.artifact, should_stop)) return {};
    std::atomic<bool> cancel{false};
    auto tarball = fetch_artifact(r.spec.artifact, r.spec.sha256, opts_.data_dir, &cancel);
    if (!tarball.ok()) return fail(r, p, "artifact: " + tarball.err().message, "rollout_failed");
    if (auto why = signature_refusal(r.spec, opts_.trusted_keys, opts_.allow_unsigned, r.id); !why.empty()) {
        std::error_code ec;
        fs::remove(tarball.value(), ec);  // never unpacked, never kept
        return fail(r, p, why, "rollout_refused", {{"artifact", r.spec.artifact}, {"signature", signature_source(r.spec)}});
    }
    if (!write(r, p, "unpacking", tarball->filename().string(), should_stop)) return {};
    auto dir = unpack_artifact(tarball.value(), r.spec.sha256, r.spec.version, opts_.data_dir);
    if (!dir.ok()) return fail(r, p, "unpack: " + dir.err().message, "rollout_failed");
    if (wait_gate(r, should_stop) != gate::go) return {"skipped", "the rollout stopped before this host's side test"};

    const auto models = smoke_models(r);
    if (!write(r, p, "side_test", "smoke-testing " + r.spec.version + " on side ports", should_stop)) return {};
    std::vector<std::string> tail;
    if (auto why = side_test(r, dir.value(), models, tail); !why.empty())
        return fail(r, p, why, "smoke_test_failed", {{"log_tail", lines_json(tail)}, {"models", models}});
    if (wait_gate(r, should_stop) != gate::go) return {"skipped", "the rollout stopped before this host's cutover"};

    if (!write(r, p, "waiting_slot", "", should_stop)) return {};
    if (!take_slots(r, p, should_stop)) return should_stop() ? outcome{} : outcome{"skipped", "the rollout stopped before this host's cutover"};

    // Cutover: drain the old server (its in-flight requests finish up to the drain deadline), start
    // the new one on the main ports.
    if (!write(r, p, "cutover", "draining " + running + ", starting " + r.spec.version, should_stop)) return {};
    std::vector<std::string> next = rollback_argv;
    next[0] = (dir.value() / "bin" / "rustycage").string();
    const uint64_t gen = main_.snapshot().generation;
    main_.restart_with(next);
    if (hooks_.republish) hooks_.republish();
    if (auto why = wait_new_server(gen); !why.empty()) return roll_back(r, p, rollback_argv, previous_link, why, "rollout_failed");
    if (!write(r, p, "smoke", "smoke-testing " + r.spec.version + " on the main ports", should_stop)) return {};
    const auto rep = smoke_server(main_.snapshot().openai_url, models, opts_.api_key, opts_.smoke_timeout);
    if (!rep.passed) return roll_back(r, p, rollback_argv, previous_link, "smoke test failed at " + rep.failure, "smoke_test_failed");
    // Only now does current name the new version: a host that dies before this comes back on the old one.
    if (auto st = set_version_link(opts_.data_dir, "current", r.spec.version); !st)
        return roll_back(r, p, rollback_argv, previous_link, st.err().message, "rollout_failed");
    (void) set_version_link(opts_.data_dir, "previous", previous_link);
    return finish_switched(r, p, rollback_argv, previous_link, should_stop);
}

void rollout_host::run(const stop_fn & should_stop) {
    stop_ = should_stop;
    while (!should_stop()) {
        pause_unless_stopped(should_stop, opts_.poll);
        auto active = etcd_.get(keys_.rollout_active());
        if (!active.ok() || active->kvs.empty()) continue;
        auto view = read_rollout(etcd_, keys_, active->kvs[0].value);
        if (!view.ok()) continue;
        const rollout_record & r = view->rollout;
        if (r.state != "running") continue;
        const int mine = r.cohort_of(opts_.host);
        if (mine < 0 || mine > r.cohort) continue;
        auto it = view->progress.find(opts_.host);
        host_progress p = it == view->progress.end() ? host_progress::at(opts_.host) : it->second;
        if (p.terminal()) continue;
        const outcome o = upgrade(r, p, should_stop);
        if (o.step.empty() || should_stop()) continue;  // stopping: the progress stays where it was, the next life resumes it
        // `p` is what this host wrote along the way (from_version, attempts, bake_until); write()
        // retries until etcd takes the final step.
        write(r, p, o.step, o.message, should_stop);
    }
}

}  // namespace rc::fleet
