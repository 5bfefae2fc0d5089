#pragma once
// Runs tests/fixtures/fake_hub/server.mjs over a temporary repository tree for the hub tests, and
// talks to its control plane (/__control, /__stats).
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "support/temp_dir.h"

namespace rc::test {

// n deterministic pseudo-random bytes (xorshift): distinct per seed, incompressible, reproducible.
std::string pseudo_random_bytes(size_t n, uint64_t seed);
void write_file(const std::filesystem::path & p, const std::string & data);
std::string read_file(const std::filesystem::path & p);
std::string sha256_hex(const std::string & data);

class fake_hub {
  public:
    // Starts `node server.mjs --root root --port 0` and waits (poll on its stdout, 30 s at most) for
    // its "listening <port>" line. started() is false when node is missing or the server failed.
    explicit fake_hub(const std::filesystem::path & root);
    ~fake_hub();
    fake_hub(const fake_hub &) = delete;
    fake_hub & operator=(const fake_hub &) = delete;

    static bool node_available();
    bool started() const { return port_ > 0; }
    int port() const { return port_; }
    std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

    // POST /__control with a JSON object; returns the server's fault settings.
    nlohmann::json control(const nlohmann::json & settings) const;
    nlohmann::json stats() const;  // {requests: [{method, path, query, range, auth, ua}], bytesServed}
    void reset_stats() const;

  private:
    pid_t pid_ = -1;
    int stdin_fd_ = -1;   // the server exits when this closes (even if this process crashes)
    int stdout_fd_ = -1;
    int port_ = -1;
};

}  // namespace rc::test
