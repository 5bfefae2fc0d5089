#pragma once
// The one test server (every test that drives `rustycage serve` over HTTP uses it): a real
// `rustycage serve` on free ports (port 0) in a temp models directory; it reads the bound ports from
// the "listening" line and stops the server (SIGTERM, then SIGKILL) when destroyed. Waiting for the
// server to reach a state is poll_until (support/poll.h), never a fixed sleep.
//
// Needs RC_RUSTYCAGE_BIN (the binary) defined by the test target.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "support/poll.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace rc::test {

class server_process {
  public:
    // `models`: file names to link into the models dir, as {served name, source path}.
    server_process(const std::vector<std::pair<std::string, std::string>> & models, std::vector<std::string> extra_args = {})
        : tmp_("serve"), dir_(tmp_.path()) {
        std::filesystem::create_directories(dir_ / "models");
        for (const auto & [name, src] : models) std::filesystem::create_symlink(src, dir_ / "models" / (name + ".gguf"));
        std::vector<std::string> args = {RC_RUSTYCAGE_BIN, "serve", "--openai-port", "0", "--ollama-port", "0",
                                         "--models-dir", (dir_ / "models").string()};
        // Defaults a test may override in `extra_args`.
        for (const auto & [flag, value] : {std::pair<const char *, const char *>{"--threads", "1"}, {"--ctx-size", "4096"}}) {
            if (std::find(extra_args.begin(), extra_args.end(), flag) == extra_args.end()) args.insert(args.end(), {flag, value});
        }
        args.insert(args.end(), extra_args.begin(), extra_args.end());
        start(args);
    }

    ~server_process() { stop(); }  // before tmp_ removes its directory

    bool started() const { return openai_port_ > 0; }
    pid_t pid() const { return pid_; }
    int openai_port() const { return openai_port_; }
    int ollama_port() const { return ollama_port_; }
    const std::filesystem::path & dir() const { return dir_; }

    // Sends `sig` and waits for exit, at most `grace` before SIGKILL (a test of a long drain gives
    // the drain's own time); returns the exit status (or -signal).
    int stop(int sig = SIGTERM, std::chrono::seconds grace = std::chrono::seconds(20)) {
        if (pid_ <= 0) return exit_code_;
        kill(pid_, sig);
        auto deadline = std::chrono::steady_clock::now() + grace;
        int status = 0;
        while (waitpid(pid_, &status, WNOHANG) == 0) {
            if (std::chrono::steady_clock::now() > deadline) {
                kill(pid_, SIGKILL);
                waitpid(pid_, &status, 0);
                break;
            }
            usleep(10000);
        }
        pid_ = -1;
        if (out_) fclose(out_);
        out_ = nullptr;
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
        return exit_code_;
    }

  private:
    void start(const std::vector<std::string> & args) {
        int pipefd[2];
        if (pipe2(pipefd, O_CLOEXEC) != 0) return;
        spawn_options o;
        o.stdout_fd = pipefd[1];
        pid_ = spawn(args, o);
        close(pipefd[1]);
        out_ = fdopen(pipefd[0], "r");
        char line[1024];
        // The server prints its listening line once both ports are bound (or exits on failure).
        while (pid_ > 0 && out_ && fgets(line, sizeof line, out_)) {
            std::smatch m;
            std::string s(line);
            if (std::regex_search(s, m, std::regex(R"(openai=http://[^:]+:(\d+) ollama=http://[^:]+:(\d+))"))) {
                openai_port_ = std::stoi(m[1]);
                ollama_port_ = std::stoi(m[2]);
                break;
            }
        }
    }

    temp_dir tmp_;
    std::filesystem::path dir_;
    pid_t pid_ = -1;
    FILE * out_ = nullptr;
    int openai_port_ = -1;
    int ollama_port_ = -1;
    int exit_code_ = -1;
};

}  // namespace rc::test
