#pragma once
// Real etcd members for tests: N members of one cluster on free loopback ports, each in its own
// temporary data directory, killed (SIGKILL) and removed on destruction even when a test fails.
// Members die with the test process (PR_SET_PDEATHSIG) even when it crashes. Members can be
// killed and restarted (same data directory, same ports) to test outages.
// available() is false when there is no etcd binary (scripts/setup.sh installs etcd-server).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fleet/etcd/etcd_gateway.h"
#include "etcd_tls.h"
#include "support/poll.h"
#include "support/port.h"
#include "support/process.h"
#include "support/temp_dir.h"
#include "support/text_file.h"

namespace rc::test {

class etcd_cluster {
  public:
    static std::string binary() {
        for (const char * p : {"/usr/bin/etcd", "/usr/local/bin/etcd"})
            if (access(p, X_OK) == 0) return p;
        return {};
    }
    static bool available() { return !binary().empty(); }

    // With `tls`: client URLs are https://, members require a client certificate signed by its CA
    // (client_options() carries the one named `tls_user`, "root" by default).
    explicit etcd_cluster(int members, const test_pki * tls = nullptr, std::string tls_user = "root") : dir_("etcd"), tls_(tls), tls_user_(std::move(tls_user)) {
        for (int i = 0; i < members; ++i) members_.push_back({"m" + std::to_string(i), free_port(), free_port(), -1});
        for (size_t i = 0; i < members_.size(); ++i) start(i, true);
    }
    ~etcd_cluster() {
        for (size_t i = 0; i < members_.size(); ++i) kill_member(i);
    }

    std::string endpoints() const {
        std::string out;
        for (const auto & m : members_) out += (out.empty() ? "" : ",") + client_url(m);
        return out;
    }
    std::string endpoint(size_t i) const { return client_url(members_[i]); }
    // How a client reaches the members (TLS files included).
    fleet::etcd_options client_options(std::vector<std::string> endpoints = {}) const {
        fleet::etcd_options o;
        o.endpoints = endpoints.empty() ? endpoint_list() : std::move(endpoints);
        if (tls_) {
            o.ca_file = tls_->ca().string();
            o.cert_file = tls_->cert(tls_user_).string();
            o.key_file = tls_->key(tls_user_).string();
        }
        o.user = user_;
        o.password = password_;
        return o;
    }
    // Once authentication is on: who client_options() and wait_healthy() are.
    void authenticate_as(std::string user, std::string password) {
        user_ = std::move(user);
        password_ = std::move(password);
    }
    std::vector<std::string> endpoint_list() const {
        std::vector<std::string> out;
        for (const auto & m : members_) out.push_back(client_url(m));
        return out;
    }
    size_t size() const { return members_.size(); }

    // Polls until every running member answers a read through the gateway (a cluster has a leader).
    bool wait_healthy(std::chrono::milliseconds deadline = std::chrono::seconds(60)) const {
        return poll_until([&] {
            for (const auto & m : members_) {
                if (m.pid <= 0) continue;
                fleet::etcd_gateway g(client_options({client_url(m)}));
                if (!g.get("health-probe").ok()) return false;
            }
            return true;
        }, deadline);
    }

    void kill_member(size_t i) {
        auto & m = members_[i];
        if (m.pid <= 0) return;
        kill(m.pid, SIGCONT);
        kill(m.pid, SIGKILL);
        int st = 0;
        waitpid(m.pid, &st, 0);
        m.pid = -1;
    }
    void restart_member(size_t i) { start(i, false); }
    // SIGSTOP / SIGCONT: a hung member (connections are accepted, nothing is answered), not a dead one.
    void freeze_member(size_t i) {
        if (members_[i].pid > 0) kill(members_[i].pid, SIGSTOP);
    }
    void thaw_member(size_t i) {
        if (members_[i].pid > 0) kill(members_[i].pid, SIGCONT);
    }
    bool running(size_t i) const { return members_[i].pid > 0; }
    const std::filesystem::path & dir() const { return dir_.path(); }

  private:
    struct member {
        std::string name;
        int client_port, peer_port;
        pid_t pid;
    };
    std::string client_url(const member & m) const { return std::string(tls_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(m.client_port); }
    static std::string peer_url(const member & m) { return "http://127.0.0.1:" + std::to_string(m.peer_port); }

    void start(size_t i, bool initial) {
        auto & m = members_[i];
        std::string cluster;
        for (const auto & o : members_) cluster += (cluster.empty() ? "" : ",") + o.name + "=" + peer_url(o);
        const auto data = dir_.path() / m.name;
        std::vector<std::string> args = {binary(), "--name", m.name, "--data-dir", data.string(),
                                         "--listen-client-urls", client_url(m), "--advertise-client-urls", client_url(m),
                                         "--listen-peer-urls", peer_url(m), "--initial-advertise-peer-urls", peer_url(m),
                                         "--initial-cluster", cluster, "--initial-cluster-token", "rc-test-" + std::to_string(getpid()),
                                         "--initial-cluster-state", "new",
                                         // etcd's defaults; its shortest lease is 1.5 election timeouts (2 s), the agents' test TTL.
                                         "--heartbeat-interval", "100", "--election-timeout", "1000", "--logger", "zap", "--log-level", "error",
                                         // Tests only: cheap password hashes (every etcdctl call of the setup authenticates).
                                         "--bcrypt-cost", "4"};
        if (tls_)
            args.insert(args.end(), {"--cert-file", tls_->cert("server").string(), "--key-file", tls_->key("server").string(), "--trusted-ca-file",
                                     tls_->ca().string(), "--client-cert-auth"});
        (void) initial;
        m.pid = spawn(args, tied_to_test((dir_.path() / (m.name + ".log")).string()));
    }

    temp_dir dir_;
    const test_pki * tls_ = nullptr;
    std::string tls_user_, user_, password_;
    std::vector<member> members_;
};

}  // namespace rc::test
