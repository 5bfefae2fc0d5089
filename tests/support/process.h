#pragma once
// The one way the tests start a program (a server, a CLI command, an etcd member, an agent, a node
// helper): fork and exec, with the child's standard streams on pipe ends or files, its environment
// and working directory chosen, and optionally tied to the test — SIGKILL when the thread that
// started it ends, so a test that crashes or is killed leaves nothing behind.
//
// Between fork and exec the child calls only async-signal-safe functions (the test process has
// threads): everything is prepared before the fork, PATH is searched in the parent. A program that
// cannot be started is reported to the parent through a close-on-exec pipe, so spawn() returns -1
// rather than a child that exits 127.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>  // environ (g++ defines _GNU_SOURCE)

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace rc::test {

struct spawn_options {
    std::vector<std::string> env;  // "NAME=value" each; empty: this process's environment
    std::filesystem::path cwd;     // empty: this process's
    // Each stream: a descriptor dup'ed onto it (a pipe end), else a file (stdin read; stdout and
    // stderr created, truncated unless `append`; the same file for both is opened once), else
    // stdin from /dev/null and stdout/stderr inherited.
    int stdin_fd = -1, stdout_fd = -1, stderr_fd = -1;
    std::string stdin_file, stdout_file, stderr_file;
    bool append = false;
    bool die_with_thread = false;  // SIGKILL when the calling thread ends (PR_SET_PDEATHSIG)
};

// Starts args[0] (a path, or a name looked up on PATH) with `args`. The child's pid, or -1 when the
// program could not be started (not found, not executable, a stream file not openable).
inline pid_t spawn(const std::vector<std::string> & args, const spawn_options & o = {}) {
    if (args.empty()) return -1;
    std::string program = args[0];
    if (program.find('/') == std::string::npos) {  // PATH, searched here: the child must not allocate
        const char * path = std::getenv("PATH");
        std::string_view dirs = path ? path : "/usr/bin:/bin";
        for (size_t at = 0; at <= dirs.size();) {
            const size_t end = std::min(dirs.find(':', at), dirs.size());
            const std::string candidate = std::string(dirs.substr(at, end - at)) + "/" + args[0];
            if (access(candidate.c_str(), X_OK) == 0) {
                program = candidate;
                break;
            }
            at = end + 1;
        }
    }
    std::vector<char *> argv, envp;
    for (const auto & a : args) argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);
    for (const auto & e : o.env) envp.push_back(const_cast<char *>(e.c_str()));
    envp.push_back(nullptr);
    char * const * child_env = o.env.empty() ? environ : envp.data();
    const std::string in_file = o.stdin_fd < 0 ? (o.stdin_file.empty() ? "/dev/null" : o.stdin_file) : "";
    const bool shared_out = !o.stdout_file.empty() && o.stdout_file == o.stderr_file && o.stdout_fd < 0 && o.stderr_fd < 0;
    const int out_flags = O_WRONLY | O_CREAT | (o.append ? O_APPEND : O_TRUNC);

    int report[2];  // the child writes errno here when it cannot exec; closed on a successful exec
    if (pipe2(report, O_CLOEXEC) != 0) return -1;
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) {
        close(report[0]);
        close(report[1]);
        return -1;
    }
    if (pid == 0) {
        auto fail = [&] {
            const int e = errno;
            (void) !write(report[1], &e, sizeof e);
            _exit(127);
        };
        if (o.die_with_thread) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent) _exit(127);  // the parent ended before prctl took effect
        }
        if (!o.cwd.empty() && chdir(o.cwd.c_str()) != 0) fail();
        auto onto = [&](int fd, const std::string & file, int flags, int target) {
            if (fd < 0 && file.empty()) return;
            const int src = fd >= 0 ? fd : open(file.c_str(), flags | O_CLOEXEC, 0644);
            if (src < 0 || dup2(src, target) < 0) fail();  // dup2 clears close-on-exec on the target
        };
        onto(o.stdin_fd, in_file, O_RDONLY, STDIN_FILENO);
        onto(o.stdout_fd, o.stdout_file, out_flags, STDOUT_FILENO);
        if (shared_out) {
            if (dup2(STDOUT_FILENO, STDERR_FILENO) < 0) fail();
        } else {
            onto(o.stderr_fd, o.stderr_file, out_flags, STDERR_FILENO);
        }
        execve(program.c_str(), argv.data(), child_env);
        fail();
    }
    close(report[1]);
    int child_errno = 0;
    ssize_t n;
    while ((n = read(report[0], &child_errno, sizeof child_errno)) < 0 && errno == EINTR) {
    }
    close(report[0]);
    if (n > 0) {  // it never ran the program
        waitpid(pid, nullptr, 0);
        errno = child_errno;
        return -1;
    }
    return pid;
}

// A program that runs beside a test (an etcd member, an agent): its output appended to `log`, and
// killed when the thread that starts it ends.
inline spawn_options tied_to_test(const std::string & log) {
    spawn_options o;
    o.stdout_file = o.stderr_file = log;
    o.append = true;
    o.die_with_thread = true;
    return o;
}

// Waits for `pid` to end: its exit status, or 128 + the signal that killed it.
inline int wait_exit(pid_t pid) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// This process's environment ("NAME=value" each) without the variables `drop` names, and with
// `overrides` set (replacing ours).
inline std::vector<std::string> environment_with(const std::map<std::string, std::string> & overrides = {},
                                                 const std::function<bool(std::string_view name)> & drop = nullptr) {
    std::vector<std::string> out;
    for (char ** e = environ; *e; ++e) {
        std::string_view kv(*e);
        const std::string_view name = kv.substr(0, kv.find('='));
        if (overrides.count(std::string(name)) || (drop && drop(name))) continue;
        out.emplace_back(kv);
    }
    for (const auto & [k, v] : overrides) out.push_back(k + "=" + v);
    return out;
}

}  // namespace rc::test
