// Cohort rollouts without servers: the plan (canary, cohorts, model capacities), the driver's
// decisions, the lease-bound semaphore on the in-memory etcd, artifacts (verify before unpack,
// resumable HTTP, unsafe tarballs), version links, side ports, the supervisor's planned restart and
// the console's JSON shape.
#include <gtest/gtest.h>

#include <cpp-httplib/httplib.h>
#include <sys/stat.h>

#include <fstream>
#include <thread>

#include "fake_etcd.h"
#include "fleet/rollout/artifact_signature.h"
#include "fleet/rollout/rollout_artifact.h"
#include "fleet/rollout/rollout_host.h"
#include "fleet/rollout/rollout_plan.h"
#include "fleet/rollout/rollout_slots.h"
#include "fleet/host/supervisor.h"
#include "support/poll.h"
#include "support/port.h"
#include "support/process.h"
#include "support/run_command.h"
#include "support/temp_dir.h"
#include "support/text_file.h"
#include "store/timestamps.h"
#include "util/sha256.h"

namespace rc::fleet {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

std::vector<rollout_planned_host> lab() {
    return {{"a", {"duo", "tiny"}, "0.1.0"}, {"b", {"duo", "tiny"}, "0.1.0"}, {"c", {"tiny"}, "0.1.0"}};
}

TEST(rollout_plan, canary_is_a_host_whose_models_live_elsewhere_and_cohorts_keep_every_model_served) {
    auto plan = plan_rollout(lab(), 2, 1);
    ASSERT_EQ(plan.cohorts.size(), 3u);
    EXPECT_EQ(plan.cohorts[0], std::vector<std::string>{"c"}) << "fewest models, none served by it alone";
    EXPECT_EQ(plan.cohorts[1], std::vector<std::string>{"a"}) << "a and b share duo: never in one cohort at max-unavailable 1";
    EXPECT_EQ(plan.cohorts[2], std::vector<std::string>{"b"});
    EXPECT_EQ(plan.slots.at("all"), 1);
    EXPECT_EQ(plan.slots.at("model:duo"), 1);
    EXPECT_EQ(plan.slots.at("model:tiny"), 1);
    EXPECT_TRUE(plan.notes.empty());

    // Wider limits: tiny may lose two of its three hosts at once, duo still only one of its two.
    plan = plan_rollout(lab(), 3, 3);
    EXPECT_EQ(plan.slots.at("model:tiny"), 2);
    EXPECT_EQ(plan.slots.at("model:duo"), 1);
    ASSERT_EQ(plan.cohorts.size(), 3u) << "duo keeps a and b apart whatever the cohort size";

    // A model on one host only: that host is never the canary, and the plan says why it hurts.
    auto hosts = lab();
    hosts.push_back({"d", {"solo"}, "0.1.0"});
    plan = plan_rollout(hosts, 4, 1);
    EXPECT_NE(plan.cohorts[0][0], "d");
    ASSERT_EQ(plan.notes.size(), 1u);
    EXPECT_NE(plan.notes[0].find("`solo`"), std::string::npos);
    EXPECT_EQ(plan.slots.at("model:solo"), 1);
    size_t planned = 0;
    for (const auto & c : plan.cohorts) planned += c.size();
    EXPECT_EQ(planned, 4u);
}

std::map<std::string, live_host> all_up() {
    std::map<std::string, live_host> live;
    for (const auto & h : lab()) live[h.id] = {true, true, "0.1.0", h.models};
    return live;
}

TEST(rollout_plan, the_driver_plans_advances_halts_and_finishes) {
    const auto t0 = std::chrono::system_clock::now();
    rollout_record r;
    r.id = "ro-1";
    r.spec.version = "0.2.0";
    r.spec.host_timeout = 30s;
    auto live = all_up();
    live["gone"] = {};  // in the roster, not registered

    auto d = decide_rollout(r, {}, live, t0);
    ASSERT_EQ(d.action, rollout_action::start);
    EXPECT_EQ(d.next.state, "running");
    EXPECT_EQ(d.next.cohort, 0);
    EXPECT_EQ(d.next.cohorts.front(), std::vector<std::string>{"c"});
    EXPECT_EQ(d.next.hosts.size(), 3u) << "a host that is down is left out";
    ASSERT_FALSE(d.next.notes.empty());
    EXPECT_NE(d.next.notes.back().find("`gone`"), std::string::npos);
    r = d.next;

    std::map<std::string, host_progress> prog;
    EXPECT_EQ(decide_rollout(r, prog, live, t0).action, rollout_action::none) << "the canary has not finished";
    prog["c"] = host_progress::at("c", "done");
    d = decide_rollout(r, prog, live, t0);
    ASSERT_EQ(d.action, rollout_action::advance);
    EXPECT_EQ(d.next.cohort, 1);
    r = d.next;

    // A host of the cohort unregistered: waited for up to host_timeout (as the driver measured it),
    // then the rollout halts. The times hosts wrote play no part: an hour off either way, or a step
    // silent for longer than the timeout, changes nothing.
    prog["a"] = host_progress::at("a", "cutover");
    live["a"].registered = false;
    for (std::chrono::minutes skew : {-60min, 60min, -20min}) {
        prog["a"].updated_at = store::format_rfc3339(t0 + skew);
        live["a"].unregistered_for = 7s;
        EXPECT_EQ(decide_rollout(r, prog, live, t0).action, rollout_action::none) << "written at t0 " << skew.count() << " s";
    }
    live["a"].unregistered_for = 31s;
    d = decide_rollout(r, prog, live, t0);
    ASSERT_EQ(d.action, rollout_action::halt);
    EXPECT_EQ(d.next.state, "failed");
    EXPECT_NE(d.next.message.find("host a has been unregistered for 31 s"), std::string::npos) << d.next.message;
    live["a"].unregistered_for = 0s;

    // A failed host halts at once, with its reason.
    live["a"].registered = true;
    prog["a"] = host_progress::at("a", "rolled_back", "smoke test failed at chat tiny: HTTP 404");
    d = decide_rollout(r, prog, live, t0);
    ASSERT_EQ(d.action, rollout_action::halt);
    EXPECT_NE(d.next.message.find("smoke test failed at chat tiny"), std::string::npos);

    // Done after the last cohort.
    prog["a"] = host_progress::at("a", "done");
    r = decide_rollout(r, prog, live, t0).next;
    ASSERT_EQ(r.cohort, 2);
    prog["b"] = host_progress::at("b", "done");
    d = decide_rollout(r, prog, live, t0);
    ASSERT_EQ(d.action, rollout_action::finish);
    EXPECT_EQ(d.next.state, "done");
    EXPECT_EQ(d.next.message, "all 3 host(s) run 0.2.0");

    // Paused and finished rollouts are left alone.
    r.state = "paused";
    EXPECT_EQ(decide_rollout(r, prog, live, t0).action, rollout_action::none);
    r.state = "aborted";
    EXPECT_EQ(decide_rollout(r, prog, live, t0).action, rollout_action::none);
}

TEST(rollout_slots, a_counting_semaphore_whose_dead_holders_free_their_slots) {
    test::fake_etcd etcd;
    fleet_keys keys;
    const std::vector<std::pair<std::string, int>> sems = {{"all", 2}, {"model:duo", 1}};
    const int64_t la = etcd.grant(10s).value(), lb = etcd.grant(10s).value(), lc = etcd.grant(10s).value();
    rollout_slots a(etcd, keys, "ro-1", "a"), b(etcd, keys, "ro-1", "b"), c(etcd, keys, "ro-1", "c");
    std::string why;
    ASSERT_TRUE(a.try_acquire(sems, la, why).value()) << why;
    EXPECT_TRUE(a.try_acquire(sems, la, why).value()) << "a holder taking its own slot again is not a second holder";
    EXPECT_FALSE(b.try_acquire(sems, lb, why).value());
    EXPECT_NE(why.find("`model:duo` is full (1): held by a"), std::string::npos) << why;
    EXPECT_EQ(b.holders("all").value(), std::vector<std::string>{"a"}) << "all or nothing: b took no slot of `all` either";
    // c needs only `all`, which has room for a second holder.
    ASSERT_TRUE(c.try_acquire({{"all", 2}}, lc, why).value()) << why;
    EXPECT_FALSE(b.try_acquire({{"all", 2}}, lb, why).value()) << "all is full now";
    // a dies: its lease goes, and with it its slots.
    ASSERT_TRUE(etcd.revoke(la).ok());
    ASSERT_TRUE(b.try_acquire(sems, lb, why).value()) << "a's death freed its slots: " << why;
    EXPECT_EQ(b.holders("all").value(), (std::vector<std::string>{"b", "c"}));
    EXPECT_EQ(b.holders("model:duo").value(), std::vector<std::string>{"b"});
    // The admit hook can refuse (never the last serving host), and then nothing is taken.
    ASSERT_TRUE(b.release(sems).ok());
    EXPECT_FALSE(b.try_acquire(sems, lb, why, [](const slot_holders &, std::string & w) {
                      w = "`duo` has no other serving host right now";
                      return false;
                  }).value());
    EXPECT_EQ(why, "`duo` has no other serving host right now");
    EXPECT_TRUE(b.holders("model:duo").value().empty());
    EXPECT_FALSE(b.try_acquire(sems, 0, why).value()) << "no lease, no slot";
}

// A release-shaped tarball: <top>/VERSION, <top>/bin/rustycage.
fs::path make_tarball(const fs::path & dir, const std::string & version, const std::string & said_version, const std::string & transform = "") {
    const std::string top = "rustycage-" + version + "-linux-x86_64-cpu";
    fs::create_directories(dir / "src" / top / "bin");
    std::ofstream(dir / "src" / top / "VERSION") << said_version << "\n";
    std::ofstream(dir / "src" / top / "bin" / "rustycage") << "#!/bin/sh\necho fake\n";
    chmod((dir / "src" / top / "bin" / "rustycage").c_str(), 0755);
    const fs::path out = dir / (top + (transform.empty() ? "" : "-odd") + ".tar.gz");
    std::string cmd = "tar -C '" + (dir / "src").string() + "' -czf '" + out.string() + "' ";
    if (!transform.empty()) cmd += "--transform='" + transform + "' ";
    cmd += "'" + top + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
    return out;
}

std::string sha_of(const fs::path & p) { return to_hex(sha256_of(test::slurp(p))); }

bool tree_has(const fs::path & dir, const std::string & needle) {
    std::error_code ec;
    for (const auto & e : fs::recursive_directory_iterator(dir, ec))
        if (e.path().filename().string().find(needle) != std::string::npos) return true;
    return false;
}

TEST(rollout_artifact, verified_before_unpacked_and_a_wrong_sum_leaves_nothing) {
    test::temp_dir tmp("artifact");
    const fs::path data = tmp.path() / "data";
    const fs::path tarball = make_tarball(tmp.path(), "0.2.0", "0.2.0");
    const std::string sha = sha_of(tarball);

    auto wrong = fetch_artifact(tarball.string(), std::string(64, '0'), data);
    ASSERT_FALSE(wrong.ok());
    EXPECT_EQ(wrong.err().code, errc::data_loss);
    EXPECT_NE(wrong.err().message.find("sha256 mismatch"), std::string::npos);
    EXPECT_NE(wrong.err().message.find(sha), std::string::npos) << "says what it got";
    EXPECT_FALSE(tree_has(data / "downloads", ".part")) << "the bad bytes are deleted";
    EXPECT_FALSE(tree_has(data / "downloads", ".tar.gz"));
    EXPECT_FALSE(fs::exists(versions_dir(data)));

    EXPECT_EQ(fetch_artifact("relative/path.tar.gz", sha, data).err().code, errc::invalid_argument);
    EXPECT_EQ(fetch_artifact(tarball.string(), "xyz", data).err().code, errc::invalid_argument);

    auto got = fetch_artifact(tarball.string(), sha, data);
    ASSERT_TRUE(got.ok()) << got.err().message;
    auto dir = unpack_artifact(got.value(), sha, "0.2.0", data);
    ASSERT_TRUE(dir.ok()) << dir.err().message;
    EXPECT_EQ(dir.value(), versions_dir(data) / "0.2.0");
    EXPECT_EQ(access((dir.value() / "bin" / "rustycage").c_str(), X_OK), 0);
    EXPECT_FALSE(tree_has(versions_dir(data), ".staging"));
    // The same version from the same artifact again: nothing to do.
    const auto mtime = fs::last_write_time(dir.value() / "bin" / "rustycage");
    ASSERT_TRUE(unpack_artifact(got.value(), sha, "0.2.0", data).ok());
    EXPECT_EQ(fs::last_write_time(dir.value() / "bin" / "rustycage"), mtime);

    // An artifact that is not the version asked for, or with a member outside its tree, is refused.
    const fs::path liar = make_tarball(tmp.path() / "liar", "0.3.0", "0.3.1");
    auto refused = unpack_artifact(liar, sha_of(liar), "0.3.0", data);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.err().message.find("version '0.3.1', not 0.3.0"), std::string::npos) << refused.err().message;
    EXPECT_FALSE(fs::exists(versions_dir(data) / "0.3.0"));
    const fs::path evil = make_tarball(tmp.path() / "evil", "0.4.0", "0.4.0", "s,^,../,");
    refused = unpack_artifact(evil, sha_of(evil), "0.4.0", data);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.err().message.find("unsafe member name"), std::string::npos) << refused.err().message;
    EXPECT_FALSE(tree_has(versions_dir(data), ".staging"));
}

TEST(rollout_artifact, an_http_download_resumes_where_it_stopped) {
    test::temp_dir tmp("artifact-http");
    const fs::path tarball = make_tarball(tmp.path(), "0.2.0", "0.2.0");
    const std::string body = test::slurp(tarball), sha = sha_of(tarball);
    httplib::Server srv;
    std::mutex mu;
    std::vector<std::string> ranges;
    srv.Get("/a.tar.gz", [&](const httplib::Request & req, httplib::Response & res) {
        {
            std::lock_guard<std::mutex> l(mu);
            ranges.push_back(req.get_header_value("Range"));
        }
        res.set_content(body, "application/gzip");  // httplib answers ranges itself (206)
    });
    const int port = srv.bind_to_any_port("127.0.0.1");
    std::thread t([&] { srv.listen_after_bind(); });
    srv.wait_until_ready();
    const fs::path data = tmp.path() / "data";
    fs::create_directories(data / "downloads");
    // An earlier attempt got the first half.
    std::ofstream(data / "downloads" / (sha + ".part"), std::ios::binary) << body.substr(0, body.size() / 2);
    auto got = fetch_artifact("http://127.0.0.1:" + std::to_string(port) + "/a.tar.gz", sha, data);
    srv.stop();
    t.join();
    ASSERT_TRUE(got.ok()) << got.err().message;
    EXPECT_EQ(test::slurp(got.value()), body);
    ASSERT_EQ(ranges.size(), 1u);
    EXPECT_EQ(ranges[0], "bytes=" + std::to_string(body.size() / 2) + "-");
}

TEST(rollout_artifact, a_failed_download_leaves_no_part_unless_it_can_resume) {
    test::temp_dir tmp("artifact-fail");
    const fs::path tarball = make_tarball(tmp.path(), "0.2.0", "0.2.0");
    const std::string body = test::slurp(tarball), sha = sha_of(tarball);
    const fs::path data = tmp.path() / "data", downloads = data / "downloads";
    fs::create_directories(downloads);
    // Left behind by an older rollout: never resumed now, so it goes.
    std::ofstream(downloads / (std::string(64, 'a') + ".part")) << "old";

    // A local artifact that cannot be read: nothing stays (a local copy never resumes).
    auto missing = fetch_artifact((tmp.path() / "gone.tar.gz").string(), sha, data);
    ASSERT_FALSE(missing.ok());
    EXPECT_FALSE(tree_has(downloads, ".part")) << "neither this download's .part nor the old one";

    // HTTP: a refusal leaves nothing; a transfer cut off half way keeps its resume point.
    httplib::Server srv;
    srv.Get("/refused.tar.gz", [&](const httplib::Request &, httplib::Response & res) { res.status = 403; });
    srv.Get("/cut.tar.gz", [&](const httplib::Request &, httplib::Response & res) {
        res.set_content_provider(body.size(), "application/gzip", [&](size_t offset, size_t, httplib::DataSink & sink) {
            if (offset >= body.size() / 2) return false;  // the connection drops half way
            sink.write(body.data(), body.size() / 2);
            return true;
        });
    });
    const int port = srv.bind_to_any_port("127.0.0.1");
    std::thread t([&] { srv.listen_after_bind(); });
    srv.wait_until_ready();
    const std::string base = "http://127.0.0.1:" + std::to_string(port);
    auto refused = fetch_artifact(base + "/refused.tar.gz", sha, data);
    ASSERT_FALSE(refused.ok());
    EXPECT_FALSE(tree_has(downloads, ".part"));
    auto cut = fetch_artifact(base + "/cut.tar.gz", sha, data);
    srv.stop();
    t.join();
    ASSERT_FALSE(cut.ok());
    EXPECT_EQ(cut.err().code, errc::unavailable) << cut.err().message;
    ASSERT_TRUE(fs::exists(downloads / (sha + ".part"))) << "a resumable transfer keeps its bytes";
    EXPECT_EQ(fs::file_size(downloads / (sha + ".part")), body.size() / 2);
}

TEST(rollout_artifact, links_switch_atomically_and_name_the_binary_the_agent_runs) {
    test::temp_dir tmp("links");
    const fs::path data = tmp.path();
    EXPECT_FALSE(installed_server_binary(data).has_value()) << "nothing installed: the agent runs itself";
    for (const char * v : {"0.1.0", "0.2.0"}) {
        fs::create_directories(versions_dir(data) / v / "bin");
        std::ofstream(versions_dir(data) / v / "bin" / "rustycage") << "#!/bin/sh\n";
        chmod((versions_dir(data) / v / "bin" / "rustycage").c_str(), 0755);
    }
    ASSERT_TRUE(set_version_link(data, "current", "0.1.0").ok());
    ASSERT_TRUE(set_version_link(data, "current", "0.2.0").ok());
    EXPECT_EQ(linked_version(data, "current"), "0.2.0");
    EXPECT_EQ(installed_server_binary(data), fs::canonical(versions_dir(data) / "0.2.0" / "bin" / "rustycage"));
    ASSERT_TRUE(set_version_link(data, "previous", "0.1.0").ok());
    ASSERT_TRUE(set_version_link(data, "previous", "").ok());
    EXPECT_FALSE(linked_version(data, "previous").has_value());
    EXPECT_FALSE(tree_has(versions_dir(data), ".new"));
}

TEST(rollout_host, side_ports_replace_the_main_ports_whatever_their_spelling) {
    EXPECT_EQ(side_port_args({"--models-dir", "/m", "--openai-port", "8080", "--ollama-port=11434"}),
              (std::vector<std::string>{"--models-dir", "/m", "--openai-port", "0", "--ollama-port=0"}));
    EXPECT_EQ(side_port_args({"--threads", "1"}), (std::vector<std::string>{"--threads", "1", "--openai-port", "0", "--ollama-port", "0"}));
}

TEST(supervisor, restart_with_drains_the_child_and_starts_the_new_argv_as_a_planned_exit) {
    std::mutex mu;
    std::vector<supervisor_event> events;
    supervisor_options o;
    o.argv = {"/bin/sh", "-c", "echo one; exec sleep 60"};
    o.initial_backoff = 10s;  // a crash would wait this long; a planned restart does not
    o.forward_output = false;
    supervisor s(o, [&](const supervisor_event & e) {
        std::lock_guard<std::mutex> l(mu);
        events.push_back(e);
    });
    std::thread t([&] { s.run(); });
    ASSERT_TRUE(test::poll_until([&] { return !s.tail(1).empty() && s.tail(1)[0] == "one"; }, 30s));
    const auto first = s.snapshot();
    s.restart_with({"/bin/sh", "-c", "echo two; exec sleep 60"});
    ASSERT_TRUE(test::poll_until([&] { return !s.tail(1).empty() && s.tail(1)[0] == "two"; }, 5s)) << "no backoff before the new argv";
    EXPECT_EQ(s.snapshot().generation, first.generation + 1);
    EXPECT_NE(s.snapshot().pid, first.pid);
    EXPECT_NE(kill(first.pid, 0), 0) << "the old child was drained";
    EXPECT_EQ(s.argv()[2], "echo two; exec sleep 60");
    s.stop();
    t.join();
    std::lock_guard<std::mutex> l(mu);
    int planned = 0;
    for (const auto & e : events) planned += e.what == supervisor_event::kind::exited && e.planned;
    EXPECT_EQ(planned, 1);
}

TEST(rollout_record, the_console_shape_and_a_round_trip) {
    rollout_record r;
    r.id = "ro-20261201T101112Z-1a2b";
    r.spec.version = "0.2.0";
    r.spec.sha256 = std::string(64, 'a');
    r.spec.smoke_models = {"tiny"};
    r.state = "running";
    r.cohorts = {{"c"}, {"a"}, {"b"}};
    r.cohort = 1;
    r.hosts = lab();
    r.slots = {{"all", 1}, {"model:duo", 1}};
    r.started_at = "2026-12-01T10:11:12.000Z";
    auto back = parse_rollout(to_json(r).dump());
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(to_json(back.value()), to_json(r));
    rollout_view v{r, {{"c", host_progress::at("c", "done")}, {"a", host_progress::at("a", "cutover")}}};
    const auto j = to_json(v);
    EXPECT_EQ(j["id"], r.id);
    EXPECT_EQ(j["version"], "0.2.0");
    EXPECT_EQ(j["state"], "running");
    EXPECT_EQ(j["done"], 1);
    EXPECT_EQ(j["total"], 3);
    EXPECT_EQ(j["cohort"], "cohort 1 of 2");
    EXPECT_EQ(j["started_at"], r.started_at);
    ASSERT_EQ(j["hosts"].size(), 3u);
    EXPECT_EQ(j["hosts"][1]["host"], "a");
    EXPECT_EQ(j["hosts"][1]["step"], "cutover");
    EXPECT_EQ(j["hosts"][2]["step"], "pending");
    EXPECT_FALSE(parse_rollout("[]").ok());
    EXPECT_TRUE(valid_version_name("0.2.0-rc.1+cpu"));
    EXPECT_FALSE(valid_version_name("../x"));
    EXPECT_FALSE(valid_version_name(""));
    EXPECT_EQ(slot_key_name("model:hf.co/x/y:Q4"), "model:hf.co%2Fx%2Fy:Q4");
}

TEST(artifact_signature, a_signature_verifies_only_with_a_trusted_key_for_that_artifact) {
    test::temp_dir tmp("signature");
    auto lab = generate_signing_key(), other = generate_signing_key();
    ASSERT_TRUE(lab.ok() && other.ok());
    std::ofstream(tmp.path() / "lab.pem") << lab->private_pem;
    std::ofstream(tmp.path() / "other.pem") << other->private_pem;
    std::ofstream(tmp.path() / "trusted.pem") << other->public_pem << lab->public_pem;  // two keys, the lab's second
    std::ofstream(tmp.path() / "empty.pem") << "not a key\n";
    const std::string sha(64, 'a'), sha2(64, 'b');

    auto keys = load_trusted_keys(tmp.path() / "trusted.pem");
    ASSERT_TRUE(keys.ok()) << keys.err().message;
    ASSERT_EQ(keys->size(), 2u);
    EXPECT_EQ(keys->at(1).id, public_key_id(lab->public_pem).value());
    EXPECT_EQ(load_trusted_keys(tmp.path() / "empty.pem").err().code, errc::invalid_argument);
    EXPECT_EQ(load_trusted_keys(tmp.path() / "missing.pem").err().code, errc::invalid_argument);

    auto sig = sign_artifact(tmp.path() / "lab.pem", sha);
    ASSERT_TRUE(sig.ok()) << sig.err().message;
    auto who = verify_artifact(keys.value(), sha, sig.value());
    ASSERT_TRUE(who.ok()) << who.err().message;
    EXPECT_EQ(who.value(), keys->at(1).id);

    // Another artifact, an untrusted key, a flipped byte, a file that is not a signature: refused.
    EXPECT_EQ(verify_artifact(keys.value(), sha2, sig.value()).err().code, errc::permission_denied);
    auto only_other = keys.value();
    only_other.pop_back();
    auto untrusted = verify_artifact(only_other, sha, sig.value());
    ASSERT_FALSE(untrusted.ok());
    EXPECT_NE(untrusted.err().message.find("not among this host's trusted keys"), std::string::npos) << untrusted.err().message;
    std::string flipped = sig.value();
    const size_t at = flipped.find("ed25519 ") + 10;
    flipped[at] = flipped[at] == 'A' ? 'B' : 'A';
    EXPECT_EQ(verify_artifact(keys.value(), sha, flipped).err().code, errc::permission_denied);
    EXPECT_EQ(verify_artifact(keys.value(), sha, "hello").err().code, errc::invalid_argument);
    // A signature naming the lab's key id but made by another key does not pass either.
    std::string forged = sign_artifact(tmp.path() / "other.pem", sha).value();
    const auto other_id = public_key_id(other->public_pem).value();
    forged.replace(forged.find(other_id), other_id.size(), keys->at(1).id);
    EXPECT_EQ(verify_artifact(keys.value(), sha, forged).err().code, errc::permission_denied);
}

// What a host decides before unpacking: nothing without keys of its own (unless told to run
// unsigned builds), and a signature made by scripts/release-sign.sh (openssl, what `make release`
// uses) verifies here as one made by `rustycage release sign` does, and the other way round.
TEST(artifact_signature, a_host_unpacks_only_what_its_own_keys_verify_whoever_signed_it) {
    test::temp_dir tmp("refusal");
    const auto dir = tmp.path();
    const std::string bytes = "the artifact's bytes";
    std::ofstream(dir / "a.tar.gz") << bytes;
    rollout_spec spec;
    spec.artifact = (dir / "a.tar.gz").string();
    spec.sha256 = to_hex(sha256_of(bytes));

    EXPECT_NE(signature_refusal(spec, {}, false, "ro-1").find("no trusted keys"), std::string::npos);
    EXPECT_EQ(signature_refusal(spec, {}, true, "ro-1"), "") << "--allow-unsigned-artifacts";

    const std::string script = std::string(RC_SOURCE_DIR) + "/scripts/release-sign.sh";
    const auto keygen = test::run_command({"bash", script, "--keygen", (dir / "lab.pem").string()});
    ASSERT_EQ(keygen.code, 0) << keygen.err;
    EXPECT_NE(signature_refusal(spec, dir / "lab.pem.pub", false, "ro-1").find("cannot be read"), std::string::npos) << "no .sig yet";
    const auto signed_by_openssl = test::run_command({"bash", script, "--key", (dir / "lab.pem").string(), spec.artifact});
    ASSERT_EQ(signed_by_openssl.code, 0) << signed_by_openssl.err;
    EXPECT_EQ(signature_refusal(spec, dir / "lab.pem.pub", false, "ro-1"), "");
    EXPECT_EQ(signature_refusal(spec, dir / "lab.pem.pub", true, "ro-1"), "") << "with keys, the signature is checked";

    // Another key's signature: refused, even with --allow-unsigned-artifacts (keys are given).
    auto other = generate_signing_key();
    ASSERT_TRUE(other.ok());
    std::ofstream(dir / "other.pem") << other->private_pem;
    std::ofstream(spec.artifact + ".sig") << sign_artifact(dir / "other.pem", spec.sha256).value();
    EXPECT_NE(signature_refusal(spec, dir / "lab.pem.pub", true, "ro-1").find("nothing was unpacked"), std::string::npos);
    // `rustycage release sign`'s signature verifies with openssl's.
    std::ofstream(spec.artifact + ".sig") << sign_artifact(dir / "lab.pem", spec.sha256).value();
    const auto verified = test::run_command({"bash", script, "--verify", (dir / "lab.pem.pub").string(), spec.artifact});
    EXPECT_EQ(verified.code, 0) << verified.err;
}

}  // namespace
}  // namespace rc::fleet
