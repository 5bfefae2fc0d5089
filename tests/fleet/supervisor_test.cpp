// The supervisor with stand-in children (/bin/sh scripts) and a stand-in health route: readiness,
// restart with backoff, crash-loop detection, output tail, drain.
#include <gtest/gtest.h>

#include <cpp-httplib/httplib.h>
#include <signal.h>

#include <algorithm>
#include <set>
#include <thread>

#include "fleet/host/supervisor.h"
#include "support/poll.h"
#include "support/port.h"
#include "support/process.h"
#include "support/temp_dir.h"
#include "support/text_file.h"

namespace rc::fleet {
namespace {

using namespace std::chrono_literals;
using test::poll_until;

struct recorder {
    std::mutex mu;
    std::vector<supervisor_event> events;
    void operator()(const supervisor_event & e) {
        std::lock_guard<std::mutex> l(mu);
        events.push_back(e);
    }
    int count(supervisor_event::kind k) {
        std::lock_guard<std::mutex> l(mu);
        int n = 0;
        for (const auto & e : events) n += e.what == k;
        return n;
    }
    std::vector<supervisor_event> all() {
        std::lock_guard<std::mutex> l(mu);
        return events;
    }
};

supervisor_options sh(const std::string & script) {
    supervisor_options o;
    o.argv = {"/bin/sh", "-c", script};
    o.initial_backoff = 50ms;
    o.max_backoff = 200ms;
    o.drain_timeout = 5s;
    o.forward_output = false;
    return o;
}

TEST(supervisor, starts_that_never_get_ready_are_one_crash_loop) {
    recorder rec;
    supervisor s(sh("echo 'error: cannot preload tiny'; exit 3"), std::ref(rec));
    std::thread t([&] { s.run(); });
    ASSERT_TRUE(poll_until([&] { return rec.count(supervisor_event::kind::exited) >= 5; }, 30s));
    // Once in the loop its retries start and back off, but peers see crash_loop throughout.
    const auto seen = rec.count(supervisor_event::kind::exited);
    std::set<std::string> states;
    ASSERT_TRUE(poll_until([&] {
        states.insert(s.snapshot().state);
        return rec.count(supervisor_event::kind::exited) >= seen + 2;
    }, 30s));
    EXPECT_EQ(states, std::set<std::string>{"crash_loop"});
    s.stop();
    t.join();
    EXPECT_EQ(rec.count(supervisor_event::kind::crash_loop), 1) << "one crash loop, however long it lasts";
    for (const auto & e : rec.all()) {
        if (e.what != supervisor_event::kind::crash_loop) continue;
        EXPECT_EQ(e.consecutive_failures, 3);
        EXPECT_EQ(e.exit_description, "exit status 3");
        ASSERT_FALSE(e.tail.empty());
        EXPECT_EQ(e.tail.back(), "error: cannot preload tiny");
        EXPECT_EQ(e.recent_exits.size(), 3u);
    }
    // Backoff doubles up to the maximum.
    std::vector<std::chrono::milliseconds> waits;
    for (const auto & e : rec.all())
        if (e.what == supervisor_event::kind::exited) waits.push_back(e.next_start_in);
    ASSERT_GE(waits.size(), 4u);
    EXPECT_EQ(waits[0], 50ms);
    EXPECT_EQ(waits[1], 100ms);
    EXPECT_EQ(waits[2], 200ms);
    EXPECT_EQ(waits[3], 200ms);
    EXPECT_EQ(s.snapshot().state, "stopped");
    EXPECT_GE(s.snapshot().restarts, 5);
}

TEST(supervisor, a_ready_child_that_crashes_is_restarted_and_says_how_it_died) {
    httplib::Server health;
    health.Get("/v1/health/ready", [](const httplib::Request &, httplib::Response & r) { r.set_content("{\"status\":\"ready\"}", "application/json"); });
    const int port = health.bind_to_any_port("127.0.0.1");
    std::thread ht([&] { health.listen_after_bind(); });
    health.wait_until_ready();

    recorder rec;
    const std::string url = "http://127.0.0.1:" + std::to_string(port);
    supervisor s(sh("echo \"rustycage listening openai=" + url + " ollama=" + url + " models=/x\"; exec sleep 60"), std::ref(rec));
    std::thread t([&] { s.run(); });
    ASSERT_TRUE(poll_until([&] { return rec.count(supervisor_event::kind::ready) == 1; }, 30s));
    EXPECT_EQ(s.snapshot().state, "ready");
    EXPECT_EQ(s.snapshot().openai_url, url);
    const int pid = s.snapshot().pid;
    ASSERT_GT(pid, 0);
    kill(pid, SIGSEGV);
    ASSERT_TRUE(poll_until([&] { return rec.count(supervisor_event::kind::ready) == 2; }, 30s)) << "restarted and ready again";
    EXPECT_NE(s.snapshot().pid, pid);
    bool saw = false;
    for (const auto & e : rec.all()) {
        if (e.what != supervisor_event::kind::exited) continue;
        saw = true;
        EXPECT_TRUE(e.was_ready);
        EXPECT_EQ(e.exit_description.rfind("signal 11 (", 0), 0u) << e.exit_description;
        EXPECT_EQ(e.consecutive_failures, 0);
    }
    EXPECT_TRUE(saw);
    EXPECT_EQ(rec.count(supervisor_event::kind::crash_loop), 0);

    // Drain: SIGTERM reaches the child (sleep dies of it), run() returns, nothing is left behind.
    const int last = s.snapshot().pid;
    s.stop();
    t.join();
    EXPECT_NE(kill(last, 0), 0) << "the child outlived its supervisor";
    EXPECT_EQ(s.snapshot().state, "stopped");
    health.stop();
    ht.join();
}

TEST(supervisor, a_child_that_ignores_sigterm_is_killed_after_the_drain_timeout) {
    recorder rec;
    auto o = sh("trap '' TERM; echo started; while :; do sleep 0.1; done");
    o.drain_timeout = 500ms;
    supervisor s(o, std::ref(rec));
    std::thread t([&] { s.run(); });
    ASSERT_TRUE(poll_until([&] { return !s.tail(1).empty() && s.tail(1)[0] == "started"; }, 30s));
    const int pid = s.snapshot().pid;
    const auto t0 = std::chrono::steady_clock::now();
    s.stop();
    t.join();
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 450ms);
    EXPECT_NE(kill(pid, 0), 0);
}


// Round three: a restarted agent started its server while the previous one (its agent gone) still
// drained and held the ports: the bind failed three times, a false crash_loop, and with a triager a
// GitHub issue about a healthy host. The supervisor records its child; the next one waits for the
// recorded child to exit before it starts its own.
TEST(supervisor, a_previous_server_still_draining_is_waited_for_and_no_crash_loop) {
    const test::temp_dir dir("sup-previous");
    const std::string ports = (dir.path() / "ports").string();
    // The stand-in server holds "its ports" (a lock) while it runs; SIGTERM drains it for 1.5 s.
    auto o = sh("exec 9>" + ports + "; flock -n 9 || { echo 'error: the address is already in use'; exit 1; }; "
                "trap 'sleep 1.5; exit 0' TERM; echo holding the ports; while :; do sleep 0.05; done");
    o.pid_file = (dir.path() / "server.pid").string();
    auto holding = [](const supervisor & s) {
        const auto lines = s.tail(5);
        return std::find(lines.begin(), lines.end(), "holding the ports") != lines.end();
    };
    recorder before, after;
    supervisor previous(o, std::ref(before));
    std::thread previous_run([&] { previous.run(); });
    ASSERT_TRUE(poll_until([&] { return holding(previous); }, 10s));
    const int old_pid = previous.snapshot().pid;
    EXPECT_EQ(test::slurp(o.pid_file).rfind(std::to_string(old_pid) + " ", 0), 0u) << "the running child is recorded";
    std::thread stopping([&] { previous.stop(); });  // the old agent goes; its server drains
    ASSERT_TRUE(poll_until([&] { return previous.snapshot().state == "draining"; }, 10s));

    supervisor next(o, std::ref(after));  // the restarted agent's
    std::thread next_run([&] { next.run(); });
    ASSERT_TRUE(poll_until([&] { return holding(next); }, 20s)) << "the new server starts once the old one is gone";
    EXPECT_NE(kill(old_pid, 0), 0) << "the old server exited first";
    EXPECT_EQ(after.count(supervisor_event::kind::exited), 0) << "no start failed on the ports the old server held";
    EXPECT_EQ(after.count(supervisor_event::kind::crash_loop), 0);
    stopping.join();
    previous_run.join();
    next.stop();
    next_run.join();
}

}  // namespace
}  // namespace rc::fleet
