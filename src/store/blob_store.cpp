#include "store/blob_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "store/file_io.h"
#include "util/log.h"
#include "util/sha256.h"

namespace rc::store {

namespace fs = std::filesystem;
using detail::remove_guard;
using detail::unique_fd;

namespace {

constexpr size_t k_chunk = 1 << 20;

struct hashed {
    blob_digest digest;
    uint64_t size = 0;
};

// Reads `in` to its end, hashing, and writes the bytes to `out` when it is open.
result<hashed> pump(int in, const fs::path & in_path, int out, const fs::path & out_path) {
    std::vector<char> buf(k_chunk);
    sha256 h;
    uint64_t total = 0;
    for (;;) {
        ssize_t r = ::read(in, buf.data(), buf.size());
        if (r < 0) {
            if (errno == EINTR) continue;
            return detail::io_error("cannot read", in_path, errno);
        }
        if (r == 0) break;
        h.feed(buf.data(), static_cast<size_t>(r));
        total += static_cast<uint64_t>(r);
        if (out >= 0) {
            if (auto st = detail::write_all(out, buf.data(), static_cast<size_t>(r), out_path); !st) return st.err();
        }
    }
    return hashed{blob_digest::of(h.finish()), total};
}

}  // namespace

bool blob_store::has(const blob_digest & d) const {
    struct stat st {};
    return !d.empty() && ::stat(path(d).c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

result<uint64_t> blob_store::size(const blob_digest & d) const {
    struct stat st {};
    if (d.empty() || ::stat(path(d).c_str(), &st) != 0 || !S_ISREG(st.st_mode))
        return make_error(errc::not_found, "blob " + d.str() + " not found");
    return static_cast<uint64_t>(st.st_size);
}

result<blob_digest> blob_store::commit_temp(const fs::path & tmp, remove_guard & guard, uint64_t size, const blob_digest & actual,
                                            const std::optional<blob_digest> & expected) {
    if (expected && *expected != actual)
        return make_error(errc::invalid_argument, "digest mismatch: expected " + expected->str() + ", content is " + actual.str() +
                                                      " (" + std::to_string(size) + " bytes)");
    if (auto st = detail::make_dirs(dir()); !st) return st.err();
    const fs::path target = path(actual);
    // Same digest and size already stored: keep the existing file (readers may have it open) and
    // drop ours. A wrong-sized file under that name is damage; the rename below replaces it.
    struct stat existing {};
    if (::lstat(target.c_str(), &existing) == 0 && S_ISREG(existing.st_mode) && static_cast<uint64_t>(existing.st_size) == size)
        return actual;
    if (::chmod(tmp.c_str(), 0644) != 0) return detail::io_error("cannot chmod", tmp, errno);
    if (::rename(tmp.c_str(), target.c_str()) != 0) return detail::io_error("cannot rename into", target, errno);
    guard.release();
    if (auto st = detail::fsync_dir(dir()); !st) return st.err();
    return actual;
}

result<blob_digest> blob_store::import_file(const fs::path & src, const std::optional<blob_digest> & expected, import_mode mode) {
    if (expected && expected->empty()) return make_error(errc::invalid_argument, "empty expected digest");
    struct stat lst {};
    if (::lstat(src.c_str(), &lst) != 0) {
        if (errno == ENOENT) return make_error(errc::not_found, "no such file: " + src.string());
        return detail::io_error("cannot stat", src, errno);
    }
    const fs::path tmp_dir = root_ / "tmp";

    if (mode == import_mode::move && S_ISREG(lst.st_mode) && lst.st_nlink == 1) {
        auto tmp = detail::make_temp(tmp_dir, "import-");
        if (!tmp) return tmp.err();
        tmp->fd.reset();
        if (::rename(src.c_str(), tmp->path.c_str()) == 0) {
            remove_guard guard(tmp->path);
            auto r = [&]() -> result<blob_digest> {
                unique_fd fd(::open(tmp->path.c_str(), O_RDONLY | O_CLOEXEC));
                if (!fd) return detail::io_error("cannot open", tmp->path, errno);
                auto h = pump(fd.get(), tmp->path, -1, {});
                if (!h) return h.err();
                if (auto st = detail::fsync_fd(fd.get(), tmp->path); !st) return st.err();
                return commit_temp(tmp->path, guard, h->size, h->digest, expected);
            }();
            // A refused file goes back where the caller had it.
            if (!r && ::rename(tmp->path.c_str(), src.c_str()) == 0) guard.release();
            return r;
        }
        int err = errno;
        ::unlink(tmp->path.c_str());
        if (err != EXDEV) return detail::io_error("cannot move", src, err);
        // Another filesystem: copy below, then remove the source.
    }

    unique_fd in(::open(src.c_str(), O_RDONLY | O_CLOEXEC));
    if (!in) return detail::io_error("cannot open", src, errno);
    struct stat st {};
    if (::fstat(in.get(), &st) != 0) return detail::io_error("cannot stat", src, errno);
    if (!S_ISREG(st.st_mode)) return make_error(errc::invalid_argument, "not a regular file: " + src.string());

    auto tmp = detail::make_temp(tmp_dir, "import-");
    if (!tmp) return tmp.err();
    remove_guard guard(tmp->path);
    auto h = pump(in.get(), src, tmp->fd.get(), tmp->path);
    if (!h) return h.err();
    if (auto s = detail::fsync_fd(tmp->fd.get(), tmp->path); !s) return s.err();
    tmp->fd.reset();
    auto r = commit_temp(tmp->path, guard, h->size, h->digest, expected);
    if (r && mode == import_mode::move && ::unlink(src.c_str()) != 0)
        log::warn("store", "import_source_not_removed", {{"path", src.string()}, {"errno", errno}});
    return r;
}

status blob_store::remove(const blob_digest & d) {
    if (d.empty() || ::unlink(path(d).c_str()) != 0) {
        if (d.empty() || errno == ENOENT) return make_error(errc::not_found, "blob " + d.str() + " not found");
        return detail::io_error("cannot remove", path(d), errno);
    }
    return detail::fsync_dir(dir());
}

std::vector<blob_digest> blob_store::list() const {
    std::vector<blob_digest> out;
    std::error_code ec;
    for (fs::directory_iterator it(dir(), ec), end; !ec && it != end; it.increment(ec)) {
        if (!it->is_regular_file(ec) || it->is_symlink(ec)) continue;
        auto d = blob_digest::parse(it->path().filename().string());
        if (d && d->str() == it->path().filename().string()) out.push_back(std::move(d.value()));
    }
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace rc::store
