#pragma once
// The writers' lock of one store: a mutex for threads of this process, and flock(2) on
// <root>/.store.lock for other processes (a `rustycage pull` next to a running server). flock is
// released by the kernel when a process dies, so a crash never leaves the store locked.
#include <filesystem>
#include <mutex>
#include <utility>

#include "util/result.h"

namespace rc::store {

class store_lock {
  public:
    explicit store_lock(std::filesystem::path file) : file_(std::move(file)) {}
    ~store_lock();
    store_lock(const store_lock &) = delete;
    store_lock & operator=(const store_lock &) = delete;

    class guard {
      public:
        guard(guard && o) noexcept : lock_(std::move(o.lock_)), fd_(std::exchange(o.fd_, -1)) {}
        guard & operator=(guard &&) = delete;
        ~guard();

      private:
        friend class store_lock;
        guard(std::unique_lock<std::mutex> lock, int fd) : lock_(std::move(lock)), fd_(fd) {}
        std::unique_lock<std::mutex> lock_;
        int fd_ = -1;
    };

    // Blocks until this thread holds the store exclusively. Errors: io (cannot create the file).
    result<guard> acquire();

  private:
    std::filesystem::path file_;
    std::mutex mu_;
    int fd_ = -1;  // opened on first use, kept for the lock's lifetime; guarded by mu_
};

}  // namespace rc::store
