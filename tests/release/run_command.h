#pragma once
// Runs a command to completion with its stdout and stderr captured through temporary files (no pipe
// to fill, so no deadlock however much it prints), an extra environment on top of ours.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

extern char ** environ;

namespace rc::test {

struct command_result {
    int code = -1;  // exit status; 128 + signal when killed; -1 when it could not start
    std::string out, err;
};

inline std::string slurp(const std::filesystem::path & p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

inline command_result run_command(const std::vector<std::string> & args, const std::map<std::string, std::string> & env = {}) {
    static int counter = 0;
    const auto base = std::filesystem::temp_directory_path() / ("rc-cmd-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
    const std::string out_path = base.string() + ".out", err_path = base.string() + ".err";
    std::vector<std::string> envs;
    for (char ** e = environ; *e; ++e) {
        std::string kv = *e;
        if (!env.count(kv.substr(0, kv.find('=')))) envs.push_back(kv);
    }
    for (const auto & [k, v] : env) envs.push_back(k + "=" + v);
    std::vector<char *> argv, envp;
    for (const auto & a : args) argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);
    for (const auto & e : envs) envp.push_back(const_cast<char *>(e.c_str()));
    envp.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    command_result r;
    pid_t pid = -1;
    if (posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), envp.data()) == 0) {
        int status = 0;
        waitpid(pid, &status, 0);
        r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    posix_spawn_file_actions_destroy(&fa);
    r.out = slurp(out_path);
    r.err = slurp(err_path);
    std::error_code ec;
    std::filesystem::remove(out_path, ec);
    std::filesystem::remove(err_path, ec);
    return r;
}

}  // namespace rc::test
