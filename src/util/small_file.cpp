#include "util/small_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace rc {

namespace {

error io_error(const char * what, const std::filesystem::path & path, int err) {
    return make_error(errc::io, std::string(what) + " " + path.string() + ": " + std::strerror(err));
}

struct fd_closer {
    int fd;
    ~fd_closer() { ::close(fd); }
};

}  // namespace

result<std::string> read_small_file(const std::filesystem::path & path, size_t max_bytes) {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT) return make_error(errc::not_found, "no such file: " + path.string());
        if (errno == ELOOP) return make_error(errc::invalid_argument, "not a regular file: " + path.string());
        return io_error("cannot open", path, errno);
    }
    fd_closer closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) return io_error("cannot stat", path, errno);
    if (!S_ISREG(st.st_mode)) return make_error(errc::invalid_argument, "not a regular file: " + path.string());
    if (static_cast<uint64_t>(st.st_size) > max_bytes)
        return make_error(errc::invalid_argument, "file too large (" + std::to_string(st.st_size) + " bytes): " + path.string());
    std::string out;
    char buf[65536];
    for (;;) {
        const ssize_t r = ::read(fd, buf, sizeof buf);
        if (r < 0) {
            if (errno == EINTR) continue;
            return io_error("cannot read", path, errno);
        }
        if (r == 0) break;
        out.append(buf, static_cast<size_t>(r));
        if (out.size() > max_bytes) return make_error(errc::invalid_argument, "file too large: " + path.string());
    }
    return out;
}

}  // namespace rc
