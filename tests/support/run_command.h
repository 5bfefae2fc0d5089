#pragma once
// Runs a command to completion (support/process.h) with its stdout and stderr captured through
// temporary files (no pipe to fill, so no deadlock however much it prints), an extra environment on
// top of ours, stdin from a file (or /dev/null). No shell: arguments are passed as they are.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "support/process.h"
#include "support/temp_dir.h"
#include "support/text_file.h"

namespace rc::test {

struct command_result {
    int code = -1;  // exit status; 128 + signal when killed; -1 when it could not start
    std::string out, err;
};

inline command_result run_command(const std::vector<std::string> & args, const std::map<std::string, std::string> & env = {},
                                  const std::string & stdin_file = {}) {
    const temp_dir outputs("cmd");
    spawn_options o;
    o.env = environment_with(env);
    o.stdin_file = stdin_file;
    o.stdout_file = (outputs.path() / "out").string();
    o.stderr_file = (outputs.path() / "err").string();
    command_result r;
    if (const pid_t pid = spawn(args, o); pid > 0) r.code = wait_exit(pid);
    r.out = slurp(o.stdout_file);
    r.err = slurp(o.stderr_file);
    return r;
}

}  // namespace rc::test
