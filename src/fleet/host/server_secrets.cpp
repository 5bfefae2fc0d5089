#include "fleet/host/server_secrets.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>

extern char ** environ;

namespace rc::fleet {

namespace fs = std::filesystem;

namespace {

// Exact names a server needs.
constexpr std::array k_names = {
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR",
    "LD_LIBRARY_PATH",                                                 // CUDA/ROCm runtimes outside the loader's paths
    "HF_ENDPOINT",                                                     // pulls through /api/pull go to the same Hub
    "http_proxy", "https_proxy", "all_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "CURL_CA_BUNDLE",                 // the CA bundle of those pulls
    "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS",   // make sanitize: the child is instrumented too
    "LLVM_PROFILE_FILE", "ONEAPI_DEVICE_SELECTOR", "GPU_DEVICE_ORDINAL",
};

// Prefixes: the locale, the server's own settings, and device selection and driver settings.
constexpr std::array k_prefixes = {
    "LC_", "RUSTYCAGE_", "GGML_", "LLAMA_", "CUDA_", "NVIDIA_", "HIP_", "ROCR_", "HSA_", "VK_", "MESA_", "LP_",
    "SYCL_", "ZES_", "OMP_", "KMP_", "XDG_",
};

// Substrings of names that hold secrets, in any spelling (checked upper-cased).
constexpr std::array k_secret_words = {"TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"};

// Names with a secret word that are settings, not secrets.
constexpr std::array k_not_secret = {"RUSTYCAGE_MAX_TOKENS"};

bool looks_secret(std::string_view name) {
    std::string upper(name);
    std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    if (std::find(k_not_secret.begin(), k_not_secret.end(), upper) != k_not_secret.end()) return false;
    return std::any_of(k_secret_words.begin(), k_secret_words.end(), [&](const char * w) { return upper.find(w) != std::string::npos; });
}

std::string errno_text() { return std::strerror(errno); }

constexpr const char * k_key_file = "server-api-keys";

fs::path secrets_dir(const fs::path & data_dir) { return fs::absolute(data_dir) / "secrets"; }

// The directory exists, is a real directory of ours, and is 0700.
status private_dir(const fs::path & dir) {
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return make_error(errc::io, "cannot create " + dir.string() + ": " + errno_text());
    struct stat st{};
    if (::lstat(dir.c_str(), &st) != 0) return make_error(errc::io, "cannot examine " + dir.string() + ": " + errno_text());
    if (!S_ISDIR(st.st_mode)) return make_error(errc::invalid_argument, dir.string() + " is not a directory (a symlink?): the server's keys go only into a private directory");
    if (st.st_uid != ::geteuid()) return make_error(errc::invalid_argument, dir.string() + " belongs to another user: the server's keys go only into a private directory");
    if ((st.st_mode & 0777) != 0700 && ::chmod(dir.c_str(), 0700) != 0) return make_error(errc::io, "cannot make " + dir.string() + " private: " + errno_text());
    return {};
}

}  // namespace

bool passed_to_server(std::string_view name) {
    if (name.empty() || looks_secret(name)) return false;
    if (std::find(k_names.begin(), k_names.end(), name) != k_names.end()) return true;
    return std::any_of(k_prefixes.begin(), k_prefixes.end(), [&](const char * p) { return name.starts_with(p); });
}

std::vector<std::string> server_environment(const char * const * env) {
    std::vector<std::string> out;
    for (; env && *env; ++env) {
        const std::string_view entry(*env);
        const size_t eq = entry.find('=');
        if (eq == std::string_view::npos) continue;
        if (passed_to_server(entry.substr(0, eq))) out.emplace_back(entry);
    }
    return out;
}

child_environment::child_environment() : entries_(server_environment(environ)) {
    for (auto & e : entries_) pointers_.push_back(e.data());
    pointers_.push_back(nullptr);
}

result<fs::path> write_server_key_file(const fs::path & data_dir, const std::vector<std::string> & keys) {
    const fs::path dir = secrets_dir(data_dir);
    if (keys.empty()) {
        remove_server_key_file(data_dir);
        return fs::path();
    }
    if (auto st = private_dir(dir); !st) return st.err();
    const fs::path file = dir / k_key_file;
    const fs::path tmp = dir / (std::string(k_key_file) + ".tmp");
    ::unlink(tmp.c_str());  // a previous life's, cut off mid-write
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return make_error(errc::io, "cannot create " + tmp.string() + ": " + errno_text());
    std::string text;
    for (const auto & k : keys) text += k + "\n";
    bool ok = ::fchmod(fd, 0600) == 0;  // whatever the umask
    for (size_t done = 0; ok && done < text.size();) {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        ok = n > 0;
        if (ok) done += static_cast<size_t>(n);
    }
    ok = ok && ::fsync(fd) == 0;
    const std::string why = ok ? std::string() : errno_text();
    ::close(fd);
    if (!ok || ::rename(tmp.c_str(), file.c_str()) != 0) {
        const std::string reason = ok ? errno_text() : why;
        ::unlink(tmp.c_str());
        return make_error(errc::io, "cannot write the server's key file " + file.string() + ": " + reason);
    }
    return file;
}

void remove_server_key_file(const fs::path & data_dir) {
    std::error_code ec;
    fs::remove(secrets_dir(data_dir) / k_key_file, ec);
}

}  // namespace rc::fleet
