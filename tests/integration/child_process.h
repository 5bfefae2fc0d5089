#pragma once
// A child process with its stdout and stderr read through pipes (both drained together, so neither
// fills), its environment cleaned of the developer's Hub token, proxies and RUSTYCAGE_* settings.
// Used by the integration tests that run the real binary as a command (cli_models_test) or check
// how it fails to start (server_hardening_test).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "support/process.h"

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
        spawn_options o;
        o.env = environment(env);
        o.cwd = cwd;
        o.stdout_fd = out[1];
        o.stderr_fd = err[1];
        pid_ = spawn(args, o);
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
        env_map all = {{"NO_PROXY", "127.0.0.1,localhost"}, {"no_proxy", "127.0.0.1,localhost"}};
        for (const auto & [k, v] : overrides) all[k] = v;
        return environment_with(all, [](std::string_view name) {
            return name.starts_with("HF_") || name.starts_with("RUSTYCAGE_") || name == "http_proxy" || name == "https_proxy" ||
                   name == "HTTP_PROXY" || name == "HTTPS_PROXY";
        });
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
