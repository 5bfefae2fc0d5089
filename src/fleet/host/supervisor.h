#pragma once
// Supervises the host's `rustycage serve` as a child process: starts it, reads its output (the
// "rustycage listening openai=… ollama=…" line gives its addresses; every line is kept in a bounded
// tail for evidence), waits for /v1/health/ready, restarts it with exponential backoff when it
// exits, calls a run of starts that never reach ready a crash loop, and drains it on stop().
//
// Contract:
// * Threads: run() blocks on the calling thread until stop(); call it on a dedicated thread that
//   lives as long as the supervision (the child gets PR_SET_PDEATHSIG bound to that thread, so it
//   never outlives its agent). stop(), snapshot() and tail() may be called from any thread.
// * Callbacks (on_event, on_line) run on the run() thread; they must not block for long.
// * Drain: stop() sends SIGTERM to the child, waits up to drain_timeout, then SIGKILL. The child runs in
//   its own process group, so a Ctrl-C at the agent's terminal reaches the agent only.
// * Backoff: initial_backoff, doubled after each exit up to max_backoff; back to initial once a child
//   stayed ready for stable_after. crash_loop_after consecutive exits before ready ⇒ one crash_loop event
//   (then none until the child reaches ready again); restarts go on at max pace of the backoff.
// * Environment: the child gets only what server_environment() passes (server_secrets.h): never the
//   agent's tokens, keys or passwords.
// * restart_with(argv): a planned replacement (cohort upgrades, rollback): the child is drained like
//   on stop(), then the new argv starts at once; its exit is `planned` (no crash incident, no backoff).
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "util/secret_scrub.h"

namespace rc::fleet {

struct supervisor_options {
    std::vector<std::string> argv;  // argv[0] is the executable's path
    std::chrono::milliseconds initial_backoff{500};
    std::chrono::milliseconds max_backoff{30000};
    std::chrono::milliseconds stable_after{30000};
    std::chrono::milliseconds drain_timeout{20000};
    std::chrono::milliseconds ready_probe_timeout{1000};
    int crash_loop_after = 3;
    // Where the running child is recorded (pid and start time; "" for none). A supervisor that finds
    // the record of a child still alive (its agent was restarted while the server drained) waits for
    // that server to exit — up to drain_timeout, then SIGKILL — before it starts its own: the new
    // server would otherwise fail to bind the ports the old one holds, three times, and that is no
    // crash loop.
    std::string pid_file;
    size_t tail_lines = 200;
    bool forward_output = true;  // copy the child's lines to our stderr
};

struct supervisor_event {
    enum class kind { started, ready, exited, crash_loop, stopped };
    kind what = kind::started;
    int pid = 0;
    std::string exit_description;            // exited: "exit status 1" / "signal 11 (Segmentation fault)"
    bool was_ready = false;                  // exited: the child had reached ready
    bool planned = false;                    // exited: drained by restart_with(), not a crash
    std::chrono::milliseconds uptime{0};     // exited
    int consecutive_failures = 0;            // exited / crash_loop: exits before ready, in a row
    std::chrono::milliseconds next_start_in{0};
    std::vector<std::string> tail;           // exited / crash_loop: the last lines of output
    std::vector<std::string> recent_exits;   // crash_loop: the exits of the loop
};

struct supervisor_snapshot {
    std::string state = "starting";  // starting | ready | backoff | crash_loop | draining | stopped
    int pid = 0;
    int restarts = 0;
    uint64_t generation = 0;  // children started so far: a new value is a new child
    std::string openai_url, ollama_url;
    std::string last_exit;
    std::chrono::system_clock::time_point since{};
};

class supervisor {
  public:
    supervisor(supervisor_options opts, std::function<void(const supervisor_event &)> on_event,
               std::function<void(const std::string &)> on_line = {});

    void run();
    void stop();
    supervisor_snapshot snapshot() const;
    // Drains the running child and starts `argv` instead (also the argv of later restarts).
    void restart_with(std::vector<std::string> argv);
    std::vector<std::string> argv() const;
    std::vector<std::string> tail(size_t n) const;

    // "exit status N", "signal N (name)" for a wait(2) status.
    static std::string describe_exit(int wait_status);

  private:
    void note_child(int pid);            // records (pid > 0) or clears the running child in pid_file
    void wait_for_previous_child();      // the recorded child of an earlier supervisor, until it exits
    // Runs one child until it exits or stop(); returns its wait status (or -1 when it never started).
    int run_child(bool & reached_ready, std::chrono::steady_clock::time_point & ready_at);
    void handle_output(const char * data, size_t n, std::string & partial, bool & listening);
    void set_state(const std::string & state);
    void set_state_locked(const std::string & state);  // mu_ held
    bool wait_or_stop(std::chrono::milliseconds d);

    supervisor_options opts_;
    std::function<void(const supervisor_event &)> on_event_;
    std::function<void(const std::string &)> on_line_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    bool stopping_ = false;
    bool restart_requested_ = false;
    supervisor_snapshot snap_;
    bool looping_ = false;  // in a crash loop: retries do not leave the crash_loop state
    std::deque<std::string> tail_;
    secret_scrubber scrub_;  // the output thread only: secrets never reach the tail, the log or on_line
};

}  // namespace rc::fleet
