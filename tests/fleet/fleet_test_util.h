#pragma once
// Small helpers of the fleet tests: temp dirs, free ports, polling (never sleeping), files.
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "support/poll.h"
#include "support/temp_dir.h"

extern "C" char ** environ;

namespace rc::test {

// A port nobody listens on right now, below the kernel's ephemeral range (32768+): a port picked
// there can be taken by any outgoing connection or `bind(0)` before the member that wanted it
// starts. Random in [20000, 32000), checked by binding it, never handed out twice by this process.
inline int free_port() {
    static std::mutex mu;
    static std::set<int> given;
    static std::mt19937 rng(static_cast<unsigned>(getpid()) ^ static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count()));
    std::lock_guard<std::mutex> lock(mu);
    for (int attempt = 0; attempt < 1000; ++attempt) {
        const int port = 20000 + static_cast<int>(rng() % 12000);
        if (given.count(port)) continue;
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(static_cast<uint16_t>(port));
        const bool ok = bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0;
        close(fd);
        if (!ok) continue;
        given.insert(port);
        return port;
    }
    return 0;
}

// Starts argv (with envp, output appended to `log`) as a child that gets SIGKILL when the calling
// thread ends — so a test that crashes or is killed leaves no etcd member or agent behind. -1 on failure.
inline pid_t spawn_tied(std::vector<std::string> args, std::vector<std::string> env, const std::string & log) {
    std::vector<char *> argv, envp;
    for (auto & a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto & e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid != 0) return pid;
    // The child: only async-signal-safe calls until exec.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    const int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (out < 0 || in < 0) _exit(127);
    dup2(in, STDIN_FILENO);
    dup2(out, STDOUT_FILENO);
    dup2(out, STDERR_FILENO);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
}

inline std::vector<std::string> environment() {
    std::vector<std::string> out;
    for (char ** e = environ; *e; ++e) out.push_back(*e);
    return out;
}

inline std::string slurp(const std::filesystem::path & p) {
    std::ifstream f(p, std::ios::binary);
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

}  // namespace rc::test
