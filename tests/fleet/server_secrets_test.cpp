// What of the agent's secrets a supervised server sees: its environment is allow-listed (a /bin/sh
// child's /proc/<pid>/environ is read), and its API keys come in a private file of the data dir.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <sys/stat.h>

#include <map>
#include <optional>
#include <thread>

#include "fleet/host/server_secrets.h"
#include "fleet/host/supervisor.h"
#include "http/api_key_file.h"
#include "support/poll.h"
#include "support/temp_dir.h"
#include "support/text_file.h"

namespace rc::fleet {
namespace {

using namespace std::chrono_literals;
using test::poll_until;

// Sets variables for one test and puts back what was there before.
class scoped_env {
  public:
    explicit scoped_env(const std::map<std::string, std::string> & vars) {
        for (const auto & [name, value] : vars) {
            const char * old = ::getenv(name.c_str());
            saved_[name] = old ? std::optional<std::string>(old) : std::nullopt;
            ::setenv(name.c_str(), value.c_str(), 1);
        }
    }
    ~scoped_env() {
        for (const auto & [name, old] : saved_) {
            if (old) ::setenv(name.c_str(), old->c_str(), 1);
            else ::unsetenv(name.c_str());
        }
    }

  private:
    std::map<std::string, std::optional<std::string>> saved_;
};

TEST(server_secrets, the_environment_passes_settings_and_devices_never_secrets) {
    for (const char * name : {"PATH", "HOME", "USER", "LANG", "LC_ALL", "TZ", "TMPDIR", "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
                              "GGML_VK_VISIBLE_DEVICES", "GGML_CUDA_ENABLE_UNIFIED_MEMORY", "VK_ICD_FILENAMES", "RUSTYCAGE_LOG_LEVEL",
                              "RUSTYCAGE_MODELS_DIR", "RUSTYCAGE_MAX_TOKENS", "HF_ENDPOINT", "ASAN_OPTIONS"})
        EXPECT_TRUE(passed_to_server(name)) << name;
    for (const char * name : {"GITHUB_TOKEN", "HF_TOKEN", "RUSTYCAGE_API_KEYS", "RUSTYCAGE_API_KEY_FILE", "RUSTYCAGE_ETCD_PASSWORD_FILE",
                              "RUSTYCAGE_ETCD_KEY", "RUSTYCAGE_FLEET_ETCD_KEY", "RUSTYCAGE_HOST_API_KEY", "RUSTYCAGE_SIGNING_KEY",
                              "GGML_SECRET", "CUDA_api_key", "AWS_SECRET_ACCESS_KEY", "OPENAI_API_KEY", "DB_PASSWORD", "GITHUB_API_URL",
                              "SSH_AUTH_SOCK", "LD_PRELOAD", "ANY_OTHER", ""})
        EXPECT_FALSE(passed_to_server(name)) << name;
    const char * env[] = {"PATH=/usr/bin", "GITHUB_TOKEN=ghp_x", "LC_ALL=C", "NO_EQUALS_SIGN", "RUSTYCAGE_API_KEYS=k1,k2", nullptr};
    EXPECT_EQ(server_environment(env), (std::vector<std::string>{"PATH=/usr/bin", "LC_ALL=C"}));
}

// The agent's environment holds tokens and keys; the child it supervises gets none of them.
TEST(server_secrets, a_supervised_child_gets_no_secret_from_the_environment) {
    const std::string gh = "ghp_Q7w8E9r0T1y2U3i4O5p6A7s8D9f0", hf = "hf_ZxCvBnMaSdFgHjKlQw", keys = "ak-one-Sekret,ak-two-Sekret";
    scoped_env env({{"GITHUB_TOKEN", gh}, {"HF_TOKEN", hf}, {"RUSTYCAGE_API_KEYS", keys}, {"RUSTYCAGE_LOG_LEVEL", "debug"},
                    {"CUDA_VISIBLE_DEVICES", "0,1"}});
    supervisor_options o;
    o.argv = {"/bin/sh", "-c", "echo started; exec sleep 60"};
    o.drain_timeout = 5s;
    o.forward_output = false;
    supervisor s(o, [](const supervisor_event &) {});
    std::thread t([&] { s.run(); });
    ASSERT_TRUE(poll_until([&] { return !s.tail(1).empty() && s.tail(1)[0] == "started"; }, 30s));
    const int pid = s.snapshot().pid;
    ASSERT_GT(pid, 0);
    std::string environ_text;
    // After the exec: sleep's environment is what sh was given (sh exports all it got).
    ASSERT_TRUE(poll_until([&] {
        if (test::slurp("/proc/" + std::to_string(pid) + "/cmdline").find("sleep") == std::string::npos) return false;
        environ_text = test::slurp("/proc/" + std::to_string(pid) + "/environ");
        return !environ_text.empty();
    }, 10s));
    s.stop();
    t.join();
    for (const auto & secret : {gh, hf, std::string("ak-one-Sekret")})
        EXPECT_EQ(environ_text.find(secret), std::string::npos) << "the child's environment holds " << secret.substr(0, 6) << "…";
    EXPECT_EQ(environ_text.find("RUSTYCAGE_API_KEYS="), std::string::npos);
    EXPECT_NE(environ_text.find("RUSTYCAGE_LOG_LEVEL=debug"), std::string::npos) << "settings still pass";
    EXPECT_NE(environ_text.find("CUDA_VISIBLE_DEVICES=0,1"), std::string::npos) << "device selection still passes";
    EXPECT_NE(environ_text.find("PATH="), std::string::npos);
}

TEST(server_secrets, the_servers_key_file_is_private_and_readable_as_a_key_file) {
    test::temp_dir dir("agent-data");
    auto file = write_server_key_file(dir.path(), {"key-one", "key-two"});
    ASSERT_TRUE(file.ok()) << file.err().message;
    EXPECT_EQ(file->parent_path(), dir.path() / "secrets");
    struct stat st{};
    ASSERT_EQ(::stat((dir.path() / "secrets").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    ASSERT_EQ(::stat(file->c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    auto keys = http::read_api_key_file(file->string());
    ASSERT_TRUE(keys.ok()) << keys.err().message;
    EXPECT_EQ(keys.value(), (std::vector<std::string>{"key-one", "key-two"}));

    // A wider directory is made private again; no keys: the file goes.
    ASSERT_EQ(::chmod((dir.path() / "secrets").c_str(), 0755), 0);
    ASSERT_TRUE(write_server_key_file(dir.path(), {"key-three"}).ok());
    ASSERT_EQ(::stat((dir.path() / "secrets").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    auto none = write_server_key_file(dir.path(), {});
    ASSERT_TRUE(none.ok());
    EXPECT_TRUE(none->empty());
    EXPECT_FALSE(std::filesystem::exists(*file));

    // A secrets "directory" that is a symlink (to somewhere others can read) is refused.
    test::temp_dir other("agent-data");
    std::filesystem::create_directory(other.path() / "elsewhere");
    std::filesystem::create_directory_symlink(other.path() / "elsewhere", other.path() / "secrets");
    auto refused = write_server_key_file(other.path(), {"key-one"});
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.err().message.find("symlink"), std::string::npos) << refused.err().message;
    EXPECT_FALSE(std::filesystem::exists(other.path() / "elsewhere" / "server-api-keys"));
}

}  // namespace
}  // namespace rc::fleet
