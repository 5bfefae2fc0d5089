#include "store/blob_writer.h"

#include <cerrno>

#include "store/blob_store.h"
#include "store/file_io.h"
#include "util/sha256.h"

namespace rc::store {

struct blob_writer::state {
    std::filesystem::path root;
    detail::temp_file tmp;
    sha256 hash;
    uint64_t size = 0;
    bool failed = false;    // a write failed: the temp file no longer holds what was sent
    bool finished = false;  // committed or aborted: the temp file is gone or owned by blobs/
};

// Defined here rather than in blob_store.cpp because it needs blob_writer::state.
result<blob_writer> blob_store::begin_write() {
    auto tmp = detail::make_temp(root_ / "tmp", "upload-");
    if (!tmp) return tmp.err();
    auto s = std::make_unique<blob_writer::state>();
    s->root = root_;
    s->tmp = std::move(tmp.value());
    return blob_writer(std::move(s));
}

blob_writer::blob_writer(std::unique_ptr<state> s) : s_(std::move(s)) {}
blob_writer::blob_writer(blob_writer &&) noexcept = default;
blob_writer & blob_writer::operator=(blob_writer && o) noexcept {
    if (this != &o) {
        abort();
        s_ = std::move(o.s_);
    }
    return *this;
}
blob_writer::~blob_writer() { abort(); }

uint64_t blob_writer::size() const { return s_ ? s_->size : 0; }

status blob_writer::write(const void * data, size_t n) {
    if (!s_ || s_->finished) return make_error(errc::internal, "blob writer already finished");
    if (s_->failed) return make_error(errc::io, "blob writer failed earlier");
    if (auto st = detail::write_all(s_->tmp.fd.get(), data, n, s_->tmp.path); !st) {
        s_->failed = true;
        return st;
    }
    s_->hash.feed(data, n);
    s_->size += n;
    return {};
}

result<blob_digest> blob_writer::commit(const std::optional<blob_digest> & expected) {
    if (!s_ || s_->finished) return make_error(errc::internal, "blob writer already finished");
    s_->finished = true;
    detail::remove_guard guard(s_->tmp.path);
    if (s_->failed) return make_error(errc::io, "blob writer failed earlier");
    if (expected && expected->empty()) return make_error(errc::invalid_argument, "empty expected digest");
    if (auto st = detail::fsync_fd(s_->tmp.fd.get(), s_->tmp.path); !st) return st.err();
    s_->tmp.fd.reset();
    blob_store store(s_->root);
    return store.commit_temp(s_->tmp.path, guard, s_->size, blob_digest::of(s_->hash.finish()), expected);
}

void blob_writer::abort() {
    if (!s_ || s_->finished) return;
    s_->finished = true;
    s_->tmp.fd.reset();
    detail::remove_guard guard(s_->tmp.path);
}

}  // namespace rc::store
