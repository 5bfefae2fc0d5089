#include "http/api_key_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "http/request_guard.h"
#include "util/ascii.h"

namespace rc::http {

namespace {

std::string octal_mode(mode_t m) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(m & 07777));
    return buf;
}

// Closes the descriptor on every way out.
struct fd_closer {
    int fd;
    ~fd_closer() {
        if (fd >= 0) ::close(fd);
    }
};

}  // namespace

result<std::vector<std::string>> read_api_key_file(const std::string & path) {
    const std::string named = "API key file '" + path + "'";
    // O_NONBLOCK: a FIFO put in its place must not hang the start; it is refused below.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        const int e = errno;
        return make_error(e == ENOENT ? errc::not_found : errc::io, named + " cannot be opened: " + std::strerror(e));
    }
    fd_closer closer{fd};
    struct stat st{};
    if (::fstat(fd, &st) != 0) return make_error(errc::io, named + " cannot be examined: " + std::strerror(errno));
    // fstat of the opened file, not stat of the name: what is checked is what is read.
    if (!S_ISREG(st.st_mode)) return make_error(errc::invalid_argument, named + " is not a regular file");
    if (st.st_mode & (S_IRGRP | S_IWGRP | S_IROTH | S_IWOTH))
        return make_error(errc::invalid_argument,
                          named + " is readable or writable by group or others (mode " + octal_mode(st.st_mode) + "): chmod 600 it");
    if (static_cast<size_t>(st.st_size) > k_max_api_key_file_bytes)
        return make_error(errc::invalid_argument, named + " is larger than " + std::to_string(k_max_api_key_file_bytes / 1024) + " KiB");
    // Bounded even if the file grows after the check.
    std::string text;
    char buf[4096];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return make_error(errc::io, named + " cannot be read: " + std::strerror(errno));
        if (n == 0) break;
        text.append(buf, static_cast<size_t>(n));
        if (text.size() > k_max_api_key_file_bytes)
            return make_error(errc::invalid_argument, named + " is larger than " + std::to_string(k_max_api_key_file_bytes / 1024) + " KiB");
    }
    std::vector<std::string> keys;
    size_t pos = 0;
    while (pos <= text.size()) {
        size_t nl = text.find('\n', pos);
        if (nl == std::string::npos) nl = text.size();
        const std::string_view line = trim(std::string_view(text).substr(pos, nl - pos));
        pos = nl + 1;
        if (line.empty() || line.front() == '#') continue;
        keys.emplace_back(line);
    }
    if (keys.empty()) return make_error(errc::invalid_argument, named + " holds no key (one key per line)");
    if (auto ok = check_api_keys(keys); !ok) return make_error(errc::invalid_argument, ok.err().message + " (" + named + ")");
    return keys;
}

std::vector<std::string> split_api_key_list(std::string_view list) {
    std::vector<std::string> out;
    size_t pos = 0;
    for (;;) {
        const size_t comma = list.find(',', pos);
        out.emplace_back(trim(list.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos)));
        if (comma == std::string_view::npos) break;
        pos = comma + 1;
    }
    return out;
}

}  // namespace rc::http
