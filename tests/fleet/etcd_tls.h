#pragma once
// Certificates for etcd over TLS in tests, made with the openssl command line: a CA, a server
// certificate for 127.0.0.1, and client certificates. These carry no CommonName: etcd 3.4 refuses a
// request through its JSON gateway from a certificate with one (it would not be the user); the
// identity is the etcd user and its password.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace rc::test {

class test_pki {
  public:
    explicit test_pki(std::filesystem::path dir) : dir_(std::move(dir)) {
        std::filesystem::create_directories(dir_);
        ok_ = run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.pem -days 4 -subj /CN=rc-test-ca") &&
              issue("server", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth", "/CN=etcd");
    }
    // A client certificate (O=rustycage-test, OU=`name`, no CN): name.pem, name.key.
    bool client(const std::string & name) { return issue(name, "extendedKeyUsage=clientAuth", "/O=rustycage-test/OU=" + name); }
    bool ok() const { return ok_; }
    std::filesystem::path ca() const { return dir_ / "ca.pem"; }
    std::filesystem::path cert(const std::string & name) const { return dir_ / (name + ".pem"); }
    std::filesystem::path key(const std::string & name) const { return dir_ / (name + ".key"); }
    const std::filesystem::path & dir() const { return dir_; }
    std::string log() const {
        std::ifstream in(dir_ / "openssl.log");
        return {std::istreambuf_iterator<char>(in), {}};
    }

  private:
    // Issued a day back (with libfaketime, which scripts/setup.sh installs): a host whose clock runs
    // behind — the rollout tests skew agents by an hour — still finds the certificates valid. The
    // library is preloaded directly: the `faketime` wrapper keeps a shared-memory segment named by
    // its pid, and one leaked by a killed wrapper makes a later wrapper with that pid fail.
    // openssl's output goes to openssl.log, which the failure message of a test can show.
    bool run(const std::string & cmd) const {
        static const std::string lib = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";
        static const bool backdate = std::filesystem::exists(lib);
        const std::string prefix = backdate ? "LD_PRELOAD=" + lib + " FAKETIME=-1d " : "";
        return std::system(("cd '" + dir_.string() + "' && " + prefix + cmd + " >>openssl.log 2>&1").c_str()) == 0;
    }
    bool issue(const std::string & name, const std::string & ext, const std::string & subject) {
        std::ofstream(dir_ / (name + ".ext")) << ext << "\n";
        return run("openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout " + name + ".key -out " + name + ".csr -subj " + subject) &&
               run("openssl x509 -req -in " + name + ".csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 4 -out " + name + ".pem -extfile " + name + ".ext");
    }
    std::filesystem::path dir_;
    bool ok_ = false;
};

}  // namespace rc::test
