#include "fleet/host/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <thread>
#include <utility>

#include "fleet/host/server_probe.h"
#include "fleet/host/server_secrets.h"
#include "util/log.h"
#include "util/small_file.h"

namespace rc::fleet {

namespace {

using clock = std::chrono::steady_clock;
constexpr size_t max_line = 4096;

// When a process started (field 22 of /proc/<pid>/stat, clock ticks since boot): with its pid it
// names one process, never a later one that reused the number. 0 when it is gone (or a zombie).
uint64_t process_start(int pid) {
    auto stat = rc::read_small_file("/proc/" + std::to_string(pid) + "/stat", 4096);
    if (!stat) return 0;
    const size_t close = stat->rfind(')');  // the command name may hold spaces and parentheses
    if (close == std::string::npos || close + 2 >= stat->size() || (*stat)[close + 2] == 'Z') return 0;
    std::istringstream fields(stat->substr(close + 2));
    std::string field;
    for (int i = 3; fields >> field; ++i)
        if (i == 22) return std::strtoull(field.c_str(), nullptr, 10);
    return 0;
}

}  // namespace

void supervisor::note_child(int pid) {
    if (opts_.pid_file.empty()) return;
    if (pid <= 0) {
        ::unlink(opts_.pid_file.c_str());
        return;
    }
    const std::string tmp = opts_.pid_file + ".tmp";
    {
        std::ofstream out(tmp, std::ios::trunc);
        out << pid << ' ' << process_start(pid) << '\n';
        if (!out.flush()) return;
    }
    ::rename(tmp.c_str(), opts_.pid_file.c_str());
}

void supervisor::wait_for_previous_child() {
    if (opts_.pid_file.empty()) return;
    auto text = rc::read_small_file(opts_.pid_file, 4096);
    if (!text) return;
    std::istringstream in(*text);
    long pid = 0;
    uint64_t started = 0;
    if (!(in >> pid >> started) || pid <= 1 || started == 0 || process_start(int(pid)) != started) {
        note_child(0);  // gone (or not a record of ours): nothing to wait for
        return;
    }
    // The server of this host's previous agent, still draining its requests: it holds the ports.
    rc::log::warn("fleet", "previous_server_draining", {{"pid", pid}, {"wait_ms", int64_t(opts_.drain_timeout.count())}});
    set_state("starting");
    const auto deadline = clock::now() + opts_.drain_timeout;
    bool killed = false;
    while (process_start(int(pid)) == started) {
        {
            std::lock_guard<std::mutex> lock(mu_);
            if (stopping_) return;
        }
        if (!killed && clock::now() > deadline) {
            rc::log::warn("fleet", "previous_server_killed", {{"pid", pid}, {"reason", "still running after the drain timeout"}});
            ::kill(pid_t(pid), SIGKILL);
            ::kill(-pid_t(pid), SIGKILL);  // its process group: it ran in its own
            killed = true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));  // (wait_or_stop would spin on a pending restart_with)
    }
    rc::log::info("fleet", "previous_server_gone", {{"pid", pid}});
    note_child(0);
}

supervisor::supervisor(supervisor_options opts, std::function<void(const supervisor_event &)> on_event,
                       std::function<void(const std::string &)> on_line)
    : opts_(std::move(opts)), on_event_(std::move(on_event)), on_line_(std::move(on_line)) {
    snap_.since = std::chrono::system_clock::now();
}

std::string supervisor::describe_exit(int st) {
    if (WIFEXITED(st)) return "exit status " + std::to_string(WEXITSTATUS(st));
    if (WIFSIGNALED(st)) {
        const int sig = WTERMSIG(st);
        const char * name = strsignal(sig);
        return "signal " + std::to_string(sig) + " (" + (name ? name : "?") + ")" + (WCOREDUMP(st) ? ", core dumped" : "");
    }
    return "wait status " + std::to_string(st);
}

void supervisor::set_state(const std::string & state) {
    std::lock_guard<std::mutex> lock(mu_);
    set_state_locked(state);
}

void supervisor::set_state_locked(const std::string & state) {
    // A crash loop lasts until a child gets ready (or is replaced, or the supervisor stops): the
    // retries inside it start and back off, but the host stays "crash_loop" for its peers.
    if (state == "crash_loop") looping_ = true;
    if (state == "ready" || state == "stopped" || state == "draining") looping_ = false;
    if (looping_ && (state == "starting" || state == "backoff")) return;
    if (snap_.state != state) {
        snap_.state = state;
        snap_.since = std::chrono::system_clock::now();
    }
}

supervisor_snapshot supervisor::snapshot() const {
    std::lock_guard<std::mutex> lock(mu_);
    return snap_;
}

std::vector<std::string> supervisor::tail(size_t n) const {
    std::lock_guard<std::mutex> lock(mu_);
    const size_t from = tail_.size() > n ? tail_.size() - n : 0;
    return {tail_.begin() + static_cast<std::ptrdiff_t>(from), tail_.end()};
}

bool supervisor::wait_or_stop(std::chrono::milliseconds d) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, d, [&] { return stopping_ || restart_requested_; }) && stopping_;
}

void supervisor::restart_with(std::vector<std::string> argv) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        opts_.argv = std::move(argv);
        restart_requested_ = true;
    }
    cv_.notify_all();
}

std::vector<std::string> supervisor::argv() const {
    std::lock_guard<std::mutex> lock(mu_);
    return opts_.argv;
}

void supervisor::stop() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stopping_ = true;
    }
    cv_.notify_all();
}

void supervisor::handle_output(const char * data, size_t n, std::string & partial, bool & listening) {
    static const std::regex openai_re(R"(openai=(http://\S+))"), ollama_re(R"(ollama=(http://\S+))");
    partial.append(data, n);
    for (size_t nl; (nl = partial.find('\n')) != std::string::npos || partial.size() > max_line;) {
        const size_t cut = nl == std::string::npos ? max_line : nl;
        std::string line = scrub_.line(std::string_view(partial).substr(0, cut));
        partial.erase(0, nl == std::string::npos ? cut : cut + 1);
        if (opts_.forward_output) std::cerr << line << "\n";
        if (!listening && line.starts_with("rustycage listening ")) {
            std::smatch m;
            std::lock_guard<std::mutex> lock(mu_);
            if (std::regex_search(line, m, openai_re)) snap_.openai_url = m[1];
            if (std::regex_search(line, m, ollama_re)) snap_.ollama_url = m[1];
            listening = !snap_.openai_url.empty();
        }
        {
            std::lock_guard<std::mutex> lock(mu_);
            tail_.push_back(line);
            while (tail_.size() > opts_.tail_lines) tail_.pop_front();
        }
        if (on_line_) on_line_(line);
    }
}

int supervisor::run_child(bool & reached_ready, clock::time_point & ready_at) {
    // Everything the child needs is built before fork: between fork and exec only async-signal-safe calls.
    const std::vector<std::string> args = this->argv();
    std::vector<char *> argv;
    for (const auto & a : args) argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);
    // Not the agent's environment: its tokens and keys must not reach a process that runs whatever
    // a rollout installed (server_secrets.h).
    const child_environment env;
    int fds[2];
    if (argv.size() < 2 || pipe2(fds, O_CLOEXEC) != 0) return -1;
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) _exit(127);  // the agent died before prctl took effect
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) dup2(devnull, STDIN_FILENO);
        dup2(fds[1], STDOUT_FILENO);
        dup2(fds[1], STDERR_FILENO);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, nullptr);  // the agent blocks SIGTERM/SIGINT for sigwait; the server must not inherit that
        execve(argv[0], argv.data(), env.envp());
        _exit(127);
    }
    close(fds[1]);
    note_child(pid);
    const int rd = fds[0];
    fcntl(rd, F_SETFL, fcntl(rd, F_GETFL) | O_NONBLOCK);
    {
        std::lock_guard<std::mutex> lock(mu_);
        snap_.pid = pid;
        ++snap_.generation;
        snap_.openai_url.clear();
        snap_.ollama_url.clear();
    }
    set_state("starting");
    supervisor_event started;
    started.what = supervisor_event::kind::started;
    started.pid = pid;
    on_event_(started);
    rc::log::info("fleet", "server_started", {{"pid", pid}});

    std::string partial;
    bool listening = false, term_sent = false, eof = false;
    clock::time_point kill_at{}, next_probe{};
    int status = 0;
    for (;;) {
        if (!eof) {
            pollfd p{rd, POLLIN, 0};
            if (poll(&p, 1, 200) > 0) {
                char buf[8192];
                for (;;) {
                    ssize_t n = read(rd, buf, sizeof buf);
                    if (n > 0) handle_output(buf, size_t(n), partial, listening);
                    else {
                        if (n == 0) eof = true;
                        break;
                    }
                }
            }
        } else {
            wait_or_stop(std::chrono::milliseconds(100));
        }
        const pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) {
            note_child(0);
            break;
        }
        bool stopping;
        {
            std::lock_guard<std::mutex> lock(mu_);
            stopping = stopping_ || restart_requested_;  // a planned restart drains like a stop
        }
        if (stopping && !term_sent) {
            set_state("draining");
            kill(pid, SIGTERM);
            term_sent = true;
            kill_at = clock::now() + opts_.drain_timeout;
        } else if (stopping && clock::now() > kill_at) {
            rc::log::warn("fleet", "server_drain_timeout", {{"pid", pid}});
            kill(pid, SIGKILL);
            kill(-pid, SIGKILL);
            kill_at = clock::time_point::max();
        }
        std::string url;
        {
            std::lock_guard<std::mutex> lock(mu_);
            url = snap_.openai_url;
        }
        if (listening && !reached_ready && !stopping && clock::now() >= next_probe) {
            next_probe = clock::now() + std::chrono::milliseconds(250);
            if (probe_ready(url, opts_.ready_probe_timeout).ready) {
                reached_ready = true;
                ready_at = clock::now();
                set_state("ready");
                supervisor_event ev;
                ev.what = supervisor_event::kind::ready;
                ev.pid = pid;
                on_event_(ev);
                rc::log::info("fleet", "server_ready", {{"pid", pid}, {"url", url}});
            }
        }
    }
    // Whatever it wrote last is evidence.
    for (char buf[8192];;) {
        ssize_t n = read(rd, buf, sizeof buf);
        if (n <= 0) break;
        handle_output(buf, size_t(n), partial, listening);
    }
    if (!partial.empty()) handle_output("\n", 1, partial, listening);
    close(rd);
    {
        std::lock_guard<std::mutex> lock(mu_);
        snap_.pid = 0;
        snap_.last_exit = describe_exit(status);
        set_state_locked("backoff");  // never "ready" without a child
    }
    return status;
}

void supervisor::run() {
    wait_for_previous_child();
    auto backoff = opts_.initial_backoff;
    int failures = 0;
    bool loop_reported = false;
    std::deque<std::string> recent;
    for (;;) {
        {
            std::lock_guard<std::mutex> lock(mu_);
            if (stopping_) break;
        }
        bool reached_ready = false;
        clock::time_point ready_at{};
        const auto started = clock::now();
        const int st = run_child(reached_ready, ready_at);
        bool planned = false;
        {
            std::lock_guard<std::mutex> lock(mu_);
            if (stopping_) break;
            planned = std::exchange(restart_requested_, false);
        }
        if (planned) {
            {
                std::lock_guard<std::mutex> lock(mu_);
                looping_ = false;
            }
            failures = 0;
            loop_reported = false;
            recent.clear();
            backoff = opts_.initial_backoff;
            supervisor_event ev;
            ev.what = supervisor_event::kind::exited;
            ev.exit_description = st < 0 ? "could not be started" : describe_exit(st);
            ev.was_ready = reached_ready;
            ev.planned = true;
            ev.uptime = std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - started);
            ev.tail = tail(60);
            rc::log::info("fleet", "server_replaced", {{"status", ev.exit_description}});
            on_event_(ev);
            continue;
        }
        const std::string desc = st < 0 ? "could not be started" : describe_exit(st);
        if (reached_ready) {
            failures = 0;
            loop_reported = false;
            recent.clear();
            if (clock::now() - ready_at >= opts_.stable_after) backoff = opts_.initial_backoff;
        } else {
            ++failures;
        }
        recent.push_back(desc);
        while (recent.size() > size_t(std::max(opts_.crash_loop_after, 1))) recent.pop_front();
        {
            std::lock_guard<std::mutex> lock(mu_);
            ++snap_.restarts;
        }
        supervisor_event ev;
        ev.what = supervisor_event::kind::exited;
        ev.exit_description = desc;
        ev.was_ready = reached_ready;
        ev.uptime = std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - started);
        ev.consecutive_failures = failures;
        ev.next_start_in = backoff;
        ev.tail = tail(60);
        rc::log::warn("fleet", "server_exited", {{"status", desc}, {"was_ready", reached_ready}, {"restart_in_ms", int64_t(backoff.count())}});
        on_event_(ev);
        if (!reached_ready && failures >= opts_.crash_loop_after) {
            set_state("crash_loop");
            if (!loop_reported) {
                loop_reported = true;
                supervisor_event loop = ev;
                loop.what = supervisor_event::kind::crash_loop;
                loop.recent_exits.assign(recent.begin(), recent.end());
                rc::log::error("fleet", "server_crash_loop", {{"failures", failures}, {"last", desc}});
                on_event_(loop);
            }
        } else {
            set_state("backoff");
        }
        if (wait_or_stop(backoff)) break;
        backoff = std::min(backoff * 2, opts_.max_backoff);
        {
            std::lock_guard<std::mutex> lock(mu_);
            if (restart_requested_) {  // replaced while waiting to restart: start the new argv now, afresh
                restart_requested_ = false;
                looping_ = false;
                backoff = opts_.initial_backoff;
                failures = 0;
                loop_reported = false;
                recent.clear();
            }
        }
    }
    set_state("stopped");
    supervisor_event ev;
    ev.what = supervisor_event::kind::stopped;
    on_event_(ev);
}

}  // namespace rc::fleet
