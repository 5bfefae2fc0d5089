#pragma once
// Ports for servers the tests start themselves when the program cannot bind port 0 and report it
// (etcd members, the fake GitHub, agents' servers).
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <random>
#include <set>

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

}  // namespace rc::test
