#include "store/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace rc::store::detail {

namespace fs = std::filesystem;

void unique_fd::reset(int fd) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
}

error io_error(std::string_view what, const fs::path & path, int err) {
    return make_error(errc::io, std::string(what) + " " + path.string() + ": " + std::strerror(err));
}

status write_all(int fd, const void * data, size_t n, const fs::path & path_for_errors) {
    const auto * p = static_cast<const char *>(data);
    while (n > 0) {
        ssize_t w = ::write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return io_error("cannot write", path_for_errors, errno);
        }
        p += w;
        n -= static_cast<size_t>(w);
    }
    return {};
}

status fsync_fd(int fd, const fs::path & path_for_errors) {
    if (::fsync(fd) != 0) return io_error("cannot fsync", path_for_errors, errno);
    return {};
}

status fsync_dir(const fs::path & dir) {
    unique_fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd) return io_error("cannot open directory", dir, errno);
    return fsync_fd(fd.get(), dir);
}

status make_dirs(const fs::path & dir) {
    std::error_code ec;
    if (fs::is_directory(dir, ec)) return {};
    // Create top-down so each new directory's parent can be synced once it has its entry.
    std::vector<fs::path> missing;
    for (fs::path p = dir; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
        missing.push_back(p);
        if (p == p.parent_path()) break;
    }
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
        if (::mkdir(it->c_str(), 0755) != 0 && errno != EEXIST) return io_error("cannot create directory", *it, errno);
        if (auto st = fsync_dir(it->parent_path().empty() ? fs::path(".") : it->parent_path()); !st) return st;
    }
    if (!fs::is_directory(dir, ec)) return make_error(errc::io, "not a directory: " + dir.string());
    return {};
}

result<temp_file> make_temp(const fs::path & dir, std::string_view prefix) {
    if (auto st = make_dirs(dir); !st) return st.err();
    std::string tmpl = (dir / (std::string(prefix) + "XXXXXX")).string();
    int fd = ::mkostemp(tmpl.data(), O_CLOEXEC);
    if (fd < 0) return io_error("cannot create temp file in", dir, errno);
    return temp_file{unique_fd(fd), fs::path(tmpl)};
}

remove_guard::~remove_guard() {
    if (!path_.empty()) ::unlink(path_.c_str());
}

status write_file_atomic(const fs::path & target, std::string_view contents, const fs::path & tmp_dir) {
    auto tmp = make_temp(tmp_dir, target.filename().string() + ".");
    if (!tmp) return tmp.err();
    remove_guard cleanup(tmp->path);
    if (auto st = write_all(tmp->fd.get(), contents.data(), contents.size(), tmp->path); !st) return st;
    if (::fchmod(tmp->fd.get(), 0644) != 0) return io_error("cannot chmod", tmp->path, errno);
    if (auto st = fsync_fd(tmp->fd.get(), tmp->path); !st) return st;
    tmp->fd.reset();
    if (auto st = make_dirs(target.parent_path()); !st) return st;
    if (::rename(tmp->path.c_str(), target.c_str()) != 0) return io_error("cannot rename into", target, errno);
    cleanup.release();
    return fsync_dir(target.parent_path());
}

}  // namespace rc::store::detail
