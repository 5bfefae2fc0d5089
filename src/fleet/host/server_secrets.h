#pragma once
// What of the agent's secrets its server may see: none. A server (and whatever a rollout installs as
// one) is started with an allow-listed environment, so the agent's GITHUB_TOKEN, HF_TOKEN,
// RUSTYCAGE_API_KEYS, etcd credentials and the like never reach /proc/<pid>/environ of a process
// that runs code from an artifact; and the server's API keys reach it in a private file, never in its
// argv (readable by every local user). docs/SECURITY.md "Secrets on a host".
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace rc::fleet {

// Whether the variable `name` goes to the server: what a server needs (PATH, HOME, USER, locale, TZ,
// TMPDIR, device selection and driver settings of ggml/CUDA/ROCm/Vulkan/SYCL/OpenMP, the sanitizers'
// options, proxies and CA bundles for pulls, HF_ENDPOINT, RUSTYCAGE_* settings) — and never a name
// containing TOKEN, KEY, SECRET, PASSWORD, PASSWD or CREDENTIAL (case-insensitive), whatever its
// prefix, except RUSTYCAGE_MAX_TOKENS (a limit, not a secret).
bool passed_to_server(std::string_view name);

// The "NAME=value" entries of `env` (an environ-style array ending in nullptr) that pass. Called
// before fork: nothing between fork and exec may allocate.
std::vector<std::string> server_environment(const char * const * env);

// This process's environment as a child gets it (server_environment of `environ`), in the form
// execve and posix_spawn take: built before fork, alive while the object lives.
class child_environment {
  public:
    child_environment();
    char * const * envp() const { return pointers_.data(); }

  private:
    std::vector<std::string> entries_;
    std::vector<char *> pointers_;
};

// The server's API keys, one per line, in <data_dir>/secrets/server-api-keys: the directory 0700
// and the file 0600, both owned by this process's user (a directory that is not is refused: someone
// else could swap the file), written whole by a rename. Returns its absolute path, to pass as
// `--api-key-file`. With no keys, a file left by an earlier run is removed and "" returned.
// Errors: io (the directory or file cannot be made private), invalid_argument (the directory is a
// symlink or another user's).
result<std::filesystem::path> write_server_key_file(const std::filesystem::path & data_dir, const std::vector<std::string> & keys);

// Removes the file write_server_key_file() made (a clean stop: no key stays at rest).
void remove_server_key_file(const std::filesystem::path & data_dir);

}  // namespace rc::fleet
