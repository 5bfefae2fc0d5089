#pragma once
// Streams one blob's bytes into a temp file under <root>/tmp while hashing them (the body of
// `POST /api/blobs/:digest`, a download), then commits it into blobs/ under its digest. Until
// commit succeeds nothing is visible under blobs/; a writer dropped without commit removes its temp
// file. One writer is used by one thread at a time; writers are independent of each other.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "store/digest.h"
#include "util/result.h"

namespace rc::store {

class blob_writer {
  public:
    blob_writer(blob_writer &&) noexcept;
    blob_writer & operator=(blob_writer &&) noexcept;
    ~blob_writer();

    status write(const void * data, size_t n);
    status write(std::string_view bytes) { return write(bytes.data(), bytes.size()); }
    uint64_t size() const;  // bytes written so far

    // fsyncs and moves the bytes into blobs/. With `expected`, a different digest is
    // errc::invalid_argument and nothing is stored. The writer is finished afterwards either way.
    result<blob_digest> commit(const std::optional<blob_digest> & expected = std::nullopt);
    void abort();  // drop the bytes now rather than at destruction

  private:
    friend class blob_store;
    struct state;
    explicit blob_writer(std::unique_ptr<state> s);
    std::unique_ptr<state> s_;
};

}  // namespace rc::store
