#include "hub/partial_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

namespace rc::hub {

namespace {

error io_error(const std::string & what, const std::filesystem::path & p) {
    return make_error(errc::io, what + " " + p.string() + ": " + std::strerror(errno));
}

}  // namespace

partial_file::partial_file(std::filesystem::path path, int fd, uint64_t size)
    : path_(std::move(path)), fd_(fd), size_(size), hash_(std::make_unique<sha256>()) {}

partial_file::partial_file(partial_file && o) noexcept
    : path_(std::move(o.path_)), fd_(std::exchange(o.fd_, -1)), size_(o.size_), hash_(std::move(o.hash_)) {}

partial_file::~partial_file() {
    if (fd_ >= 0) ::close(fd_);
}

result<partial_file> partial_file::open(const std::filesystem::path & path) {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return io_error("cannot open", path);
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        error e = S_ISREG(st.st_mode) ? io_error("cannot stat", path) : make_error(errc::io, "not a regular file: " + path.string());
        ::close(fd);
        return e;
    }
    return partial_file(path, fd, uint64_t(st.st_size));
}

status partial_file::hash_existing(const std::atomic<bool> * cancel) {
    std::vector<char> buf(1 << 20);
    uint64_t off = 0;
    while (off < size_) {
        if (cancel && cancel->load()) return make_error(errc::unavailable, "cancelled while checking " + path_.string());
        ssize_t n = ::pread(fd_, buf.data(), std::min<uint64_t>(buf.size(), size_ - off), off_t(off));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return io_error("cannot read", path_);
        hash_->feed(buf.data(), size_t(n));
        off += uint64_t(n);
    }
    return {};
}

status partial_file::append(const char * data, size_t n) {
    while (n > 0) {
        ssize_t w = ::pwrite(fd_, data, n, off_t(size_));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return io_error("cannot write", path_);
        hash_->feed(data, size_t(w));
        size_ += uint64_t(w);
        data += w;
        n -= size_t(w);
    }
    return {};
}

status partial_file::reset() {
    if (::ftruncate(fd_, 0) != 0) return io_error("cannot truncate", path_);
    size_ = 0;
    hash_ = std::make_unique<sha256>();
    return {};
}

status partial_file::sync() {
    if (::fsync(fd_) != 0) return io_error("cannot fsync", path_);
    return {};
}

std::string partial_file::finish_hex() { return to_hex(hash_->finish()); }

void partial_file::remove() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    std::error_code ec;
    std::filesystem::remove(path_, ec);
}

}  // namespace rc::hub
