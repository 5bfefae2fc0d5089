#pragma once
// The file a download writes into: what an earlier attempt left there, a running SHA-256 of every
// byte in it, appends, restarts, fsync. Not thread-safe; one download owns one partial file.
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "util/result.h"
#include "util/sha256.h"

namespace rc::hub {

class partial_file {
  public:
    // Opens `path` for appending, creating it (0644) when missing; the existing bytes are kept.
    // Errors: io.
    static result<partial_file> open(const std::filesystem::path & path);

    partial_file(partial_file && other) noexcept;
    partial_file & operator=(partial_file &&) = delete;
    partial_file(const partial_file &) = delete;
    ~partial_file();

    uint64_t size() const { return size_; }
    const std::filesystem::path & path() const { return path_; }

    // Feeds the bytes already in the file to the hash, so a resumed download verifies end to end.
    // Errors: io, unavailable when `cancel` became true meanwhile.
    status hash_existing(const std::atomic<bool> * cancel);
    // Writes at the end and hashes. Errors: io (disk full, ...).
    status append(const char * data, size_t n);
    // Truncates to zero and restarts the hash.
    status reset();
    status sync();
    // Digest of all bytes in the file so far (lower-case hex); call once, at the end.
    std::string finish_hex();
    // Closes and deletes the file.
    void remove();

  private:
    partial_file(std::filesystem::path path, int fd, uint64_t size);
    std::filesystem::path path_;
    int fd_ = -1;
    uint64_t size_ = 0;
    std::unique_ptr<sha256> hash_;
};

}  // namespace rc::hub
