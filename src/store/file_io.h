#pragma once
// POSIX file helpers shared by the store's files (internal to src/store): owned descriptors, full
// writes, fsync of files and directories, temp files and atomic replacement. Crash safety rests on
// one pattern: write a temp file in <root>/tmp (same filesystem), fsync it, rename it into place,
// fsync the directory — so a reader sees the old file or the whole new one, never a partial one.
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>

#include "util/result.h"

namespace rc::store::detail {

class unique_fd {
  public:
    unique_fd() = default;
    explicit unique_fd(int fd) : fd_(fd) {}
    unique_fd(unique_fd && o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    unique_fd & operator=(unique_fd && o) noexcept {
        if (this != &o) reset(std::exchange(o.fd_, -1));
        return *this;
    }
    unique_fd(const unique_fd &) = delete;
    unique_fd & operator=(const unique_fd &) = delete;
    ~unique_fd() { reset(); }

    int get() const { return fd_; }
    explicit operator bool() const { return fd_ >= 0; }
    void reset(int fd = -1);

  private:
    int fd_ = -1;
};

// errc::io with "<what> <path>: <strerror(err)>".
error io_error(std::string_view what, const std::filesystem::path & path, int err);

status write_all(int fd, const void * data, size_t n, const std::filesystem::path & path_for_errors);
status fsync_fd(int fd, const std::filesystem::path & path_for_errors);
status fsync_dir(const std::filesystem::path & dir);

// create_directories, then fsync the parent of each directory it created, so the new entries
// survive a crash along with the file later renamed into them.
status make_dirs(const std::filesystem::path & dir);

// A new empty file <dir>/<prefix>XXXXXX (mkstemp), open for writing.
struct temp_file {
    unique_fd fd;
    std::filesystem::path path;
};
result<temp_file> make_temp(const std::filesystem::path & dir, std::string_view prefix);

// Removes a path when it goes out of scope, unless released; for temp files on error paths.
class remove_guard {
  public:
    explicit remove_guard(std::filesystem::path p) : path_(std::move(p)) {}
    remove_guard(const remove_guard &) = delete;
    remove_guard & operator=(const remove_guard &) = delete;
    ~remove_guard();
    void release() { path_.clear(); }

  private:
    std::filesystem::path path_;
};

// Replaces `target` with `contents` atomically and durably (temp in tmp_dir, fsync, rename, fsync
// of target's directory, which is created if missing).
status write_file_atomic(const std::filesystem::path & target, std::string_view contents,
                         const std::filesystem::path & tmp_dir);

}  // namespace rc::store::detail
