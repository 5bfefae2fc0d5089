#pragma once
// A real `rustycage agent` for tests: its own data and models directories (the generated tiny model
// linked in as "tiny"), the server on free ports, short heartbeats and probes, output in a log
// file. kill() is kill -9 of the agent (and, with the server pid from its record, of the server);
// stop() is SIGTERM (drain). The destructor kills whatever still runs; a test process that dies
// takes its agents with it (PR_SET_PDEATHSIG), and they their servers.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "support/poll.h"
#include "support/port.h"
#include "support/process.h"
#include "support/run_command.h"
#include "support/temp_dir.h"
#include "support/text_file.h"

namespace rc::test {

struct agent_config {
    std::string host_id;
    std::string etcd;                     // endpoints, comma-separated
    std::vector<std::string> extra;       // more agent or serve flags
    std::vector<std::string> env;         // "NAME=value" added to the environment
    bool link_model = true;
};

class agent_process {
  public:
    agent_process(const std::filesystem::path & root, agent_config cfg) : cfg_(std::move(cfg)) {
        dir_ = root / cfg_.host_id;
        std::filesystem::create_directories(dir_ / "models");
        std::filesystem::create_directories(dir_ / "data");
        if (cfg_.link_model && !std::filesystem::exists(dir_ / "models" / "tiny.gguf"))
            std::filesystem::create_symlink(std::string(RC_TEST_MODELS_DIR) + "/tiny-chat.gguf", dir_ / "models" / "tiny.gguf");
        start();
    }
    ~agent_process() { kill_agent(); }

    void start() {
        if (pid_ > 0) return;
        std::vector<std::string> args = {RC_RUSTYCAGE_BIN, "agent", "--etcd", cfg_.etcd, "--host-id", cfg_.host_id,
                                         "--data-dir", (dir_ / "data").string(), "--heartbeat-ttl", "2s",
                                         "--probe-interval", "300ms", "--probe-timeout", "700ms", "--publish-interval", "1s",
                                         "--restart-backoff", "200ms", "--max-backoff", "2s", "--drain-timeout", "10s",
                                         "--models-dir", (dir_ / "models").string(), "--openai-port", "0", "--ollama-port", "0",
                                         "--threads", "1"};
        // Defaults a test may override in `extra` (serve takes each flag once).
        for (const auto & [flag, value] : {std::pair<std::string, std::string>{"--ctx-size", "1024"}, {"--parallel", "2"}})
            if (std::find(cfg_.extra.begin(), cfg_.extra.end(), flag) == cfg_.extra.end()) args.insert(args.end(), {flag, value});
        args.insert(args.end(), cfg_.extra.begin(), cfg_.extra.end());
        spawn_options o = tied_to_test(log_path().string());
        o.env = environment_with();
        o.env.insert(o.env.end(), cfg_.env.begin(), cfg_.env.end());
        pid_ = spawn(args, o);
    }

    // kill -9 of the agent; `server_pid` > 0 is killed too (the record tells it).
    void kill_agent(int server_pid = 0) {
        if (server_pid > 0) ::kill(server_pid, SIGKILL);
        if (pid_ <= 0) return;
        ::kill(pid_, SIGKILL);
        int st = 0;
        waitpid(pid_, &st, 0);
        pid_ = -1;
    }

    // SIGTERM and wait (the agent drains its server); the exit status, or -signal.
    int stop() {
        if (pid_ <= 0) return -1;
        ::kill(pid_, SIGTERM);
        int st = 0;
        const bool done = poll_until([&] { return waitpid(pid_, &st, WNOHANG) == pid_; }, std::chrono::seconds(30));
        if (!done) {
            ::kill(pid_, SIGKILL);
            waitpid(pid_, &st, 0);
        }
        pid_ = -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
    }

    // Reaps the agent when it has exited (exit_code() then tells how).
    bool running() {
        if (pid_ <= 0) return false;
        int st = 0;
        if (waitpid(pid_, &st, WNOHANG) == pid_) {
            exit_code_ = WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
            pid_ = -1;
            return false;
        }
        return true;
    }
    int exit_code() const { return exit_code_; }
    pid_t pid() const { return pid_; }
    const std::string & id() const { return cfg_.host_id; }
    const std::filesystem::path & dir() const { return dir_; }
    std::filesystem::path models_dir() const { return dir_ / "models"; }
    std::filesystem::path log_path() const { return dir_ / "agent.log"; }
    std::string log() const { return slurp(log_path()); }

  private:
    agent_config cfg_;
    std::filesystem::path dir_;
    pid_t pid_ = -1;
    int exit_code_ = 0;
};

struct cli_output {
    int code = -1;
    std::string out;  // stdout and stderr together
};

// Runs `rustycage ARGS...` to completion.
inline cli_output run_rustycage(const std::vector<std::string> & args) {
    std::vector<std::string> argv = {RC_RUSTYCAGE_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    const command_result r = run_command(argv);
    return {r.code, r.out + r.err};
}

}  // namespace rc::test
