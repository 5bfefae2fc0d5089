#include "store/store_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>

#include "store/file_io.h"

namespace rc::store {

store_lock::~store_lock() {
    if (fd_ >= 0) ::close(fd_);
}

store_lock::guard::~guard() {
    if (fd_ >= 0) ::flock(fd_, LOCK_UN);
}

result<store_lock::guard> store_lock::acquire() {
    std::unique_lock<std::mutex> lock(mu_);
    if (fd_ < 0) {
        if (auto st = detail::make_dirs(file_.parent_path()); !st) return st.err();
        fd_ = ::open(file_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd_ < 0) return detail::io_error("cannot open lock file", file_, errno);
    }
    while (::flock(fd_, LOCK_EX) != 0) {
        if (errno != EINTR) return detail::io_error("cannot lock", file_, errno);
    }
    return guard(std::move(lock), fd_);
}

}  // namespace rc::store
