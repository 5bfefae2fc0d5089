#include "fake_hub.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "support/process.h"
#include "util/sha256.h"

namespace rc::test {

namespace fs = std::filesystem;

std::string pseudo_random_bytes(size_t n, uint64_t seed) {
    std::string out(n, '\0');
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < n; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out[i] = char(x >> 24);
    }
    return out;
}

void write_file(const fs::path & p, const std::string & data) {
    fs::create_directories(p.parent_path());
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f.write(data.data(), std::streamsize(data.size()));
    if (!f) throw std::runtime_error("cannot write " + p.string());
}

std::string read_file(const fs::path & p) {
    std::ifstream f(p, std::ios::binary);
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

std::string sha256_hex(const std::string & data) { return to_hex(sha256_of(data)); }

namespace {

struct reply {
    long status = 0;
    std::string body;
};

size_t collect(char * data, size_t size, size_t n, void * user) {
    static_cast<std::string *>(user)->append(data, size * n);
    return size * n;
}

// The control plane is test plumbing, so it talks curl directly rather than through the code under test.
reply request(const std::string & method, const std::string & url, const std::string & body = {}) {
    reply r;
    CURL * c = curl_easy_init();
    curl_slist * headers = curl_slist_append(nullptr, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r.body);
    if (method == "POST") {
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.c_str());
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, long(body.size()));
    }
    if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
    curl_slist_free_all(headers);
    curl_easy_cleanup(c);
    return r;
}

nlohmann::json expect_json(const reply & r, const std::string & what) {
    if (r.status != 200) throw std::runtime_error("fake hub " + what + " answered " + std::to_string(r.status) + ": " + r.body);
    return nlohmann::json::parse(r.body);
}

}  // namespace

bool fake_hub::node_available() { return access(RC_NODE, X_OK) == 0; }

fake_hub::fake_hub(const fs::path & root) {
    if (!node_available()) return;
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0) return;
    if (pipe2(out, O_CLOEXEC) != 0) {
        close(in[0]);
        close(in[1]);
        return;
    }
    std::vector<std::string> args = {RC_NODE, std::string(RC_FAKE_HUB_DIR) + "/server.mjs", "--root", root.string(),
                                     "--port", "0", "--exit-on-stdin-close"};
    spawn_options o;
    o.stdin_fd = in[0];
    o.stdout_fd = out[1];
    pid_ = spawn(args, o);
    close(in[0]);
    close(out[1]);
    stdin_fd_ = in[1];
    stdout_fd_ = out[0];
    if (pid_ <= 0) return;

    // Read "listening <port>\n"; poll with a deadline rather than sleeping.
    std::string line;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (line.find('\n') == std::string::npos) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
        if (left <= 0) return;
        pollfd p{stdout_fd_, POLLIN, 0};
        if (poll(&p, 1, int(left)) <= 0) continue;
        char buf[256];
        ssize_t n = read(stdout_fd_, buf, sizeof buf);
        if (n <= 0) return;  // the server exited (its stderr, inherited, says why)
        line.append(buf, size_t(n));
    }
    if (line.starts_with("listening ")) port_ = std::stoi(line.substr(10));
}

fake_hub::~fake_hub() {
    if (stdin_fd_ >= 0) close(stdin_fd_);
    if (pid_ > 0) {
        kill(pid_, SIGTERM);
        int status = 0;
        waitpid(pid_, &status, 0);
    }
    if (stdout_fd_ >= 0) close(stdout_fd_);
}

nlohmann::json fake_hub::control(const nlohmann::json & settings) const {
    return expect_json(request("POST", endpoint() + "/__control", settings.dump()), "/__control");
}

nlohmann::json fake_hub::stats() const { return expect_json(request("GET", endpoint() + "/__stats"), "/__stats"); }

void fake_hub::reset_stats() const { expect_json(request("POST", endpoint() + "/__stats/reset", "{}"), "/__stats/reset"); }

}  // namespace rc::test
