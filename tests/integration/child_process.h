#pragma once
// A child process with its stdout and stderr read through pipes (both drained together, so neither
// fills), its environment cleaned of the developer's Hub token, proxies and RUSTYCAGE_* settings.
// Used by the integration tests that run the real binary as a command (cli_models_test) or check
// how it fails to start (server_hardening_test).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

extern char ** environ;

namespace rc::test {

struct cli_result {
    int code = -1;  // exit status; 128 + signal when killed
    std::string out, err;
};

// A child process with its stdout and stderr read through pipes (both drained together, so neither fills).
class child_process {
  public:
    using env_map = std::map<std::string, std::string>;

    child_process(const std::vector<std::string> & args, const env_map & env, const std::filesystem::path & cwd = {}) {
        int out[2], err[2];
        if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) return;
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
        posix_spawn_file_actions_adddup2(&fa, err[1], STDERR_FILENO);
        if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
        std::vector<std::string> envs = environment(env);
        std::vector<char *> argv, envp;
        for (const auto & a : args) argv.push_back(const_cast<char *>(a.c_str()));
        argv.push_back(nullptr);
        for (const auto & e : envs) envp.push_back(const_cast<char *>(e.c_str()));
        envp.push_back(nullptr);
        if (posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), envp.data()) != 0) pid_ = -1;
        posix_spawn_file_actions_destroy(&fa);
        close(out[1]);
        close(err[1]);
        fds_[0] = out[0];
        fds_[1] = err[0];
    }

    ~child_process() {
        if (pid_ > 0) {
            kill(pid_, SIGKILL);
            waitpid(pid_, nullptr, 0);
        }
        for (int fd : fds_)
            if (fd >= 0) close(fd);
    }
    child_process(const child_process &) = delete;
    child_process & operator=(const child_process &) = delete;

    // Reads output until `pred(stdout, stderr)` holds, both streams end, or the deadline passes.
    bool read_until(const std::function<bool(const std::string &, const std::string &)> & pred, std::chrono::seconds limit) {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (!pred(out_, err_)) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
            if (left <= 0 || !pump(int(left))) return pred(out_, err_);
        }
        return true;
    }

    void send(int sig) {
        if (pid_ > 0) kill(pid_, sig);
    }

    // Reads both streams to their end and reaps the process (killed after `limit`).
    cli_result finish(std::chrono::seconds limit = std::chrono::seconds(300)) {
        cli_result r;
        read_until([](const std::string &, const std::string &) { return false; }, limit);
        if (pid_ > 0) {
            int status = 0;
            if (waitpid(pid_, &status, WNOHANG) == 0) {
                kill(pid_, SIGKILL);
                waitpid(pid_, &status, 0);
                r.err = "(killed after " + std::to_string(limit.count()) + " s)\n";
            }
            pid_ = -1;
            r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        }
        r.out = out_;
        r.err += err_;
        return r;
    }

  private:
    // A developer's Hub token, proxy or models dir must not leak into the commands under test.
    static std::vector<std::string> environment(const env_map & overrides) {
        std::vector<std::string> out;
        for (char ** e = environ; *e; ++e) {
            std::string_view kv(*e);
            if (kv.starts_with("HF_") || kv.starts_with("RUSTYCAGE_") || kv.starts_with("http_proxy=") || kv.starts_with("https_proxy=") ||
                kv.starts_with("HTTP_PROXY=") || kv.starts_with("HTTPS_PROXY="))
                continue;
            out.emplace_back(kv);
        }
        out.push_back("NO_PROXY=127.0.0.1,localhost");
        out.push_back("no_proxy=127.0.0.1,localhost");
        for (const auto & [k, v] : overrides) out.push_back(k + "=" + v);
        return out;
    }

    // One poll round; false once both streams have ended.
    bool pump(int timeout_ms) {
        std::vector<pollfd> pfds;
        for (int fd : fds_)
            if (fd >= 0) pfds.push_back({fd, POLLIN, 0});
        if (pfds.empty()) return false;
        if (poll(pfds.data(), pfds.size(), timeout_ms) <= 0) return true;
        for (const auto & p : pfds) {
            if (!(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
            char buf[8192];
            ssize_t n = read(p.fd, buf, sizeof buf);
            int & fd = p.fd == fds_[0] ? fds_[0] : fds_[1];
            std::string & sink = p.fd == fds_[0] ? out_ : err_;
            if (n > 0) {
                sink.append(buf, size_t(n));
            } else {
                close(fd);
                fd = -1;
            }
        }
        return true;
    }

    pid_t pid_ = -1;
    int fds_[2] = {-1, -1};
    std::string out_, err_;
};

}  // namespace rc::test
