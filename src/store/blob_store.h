#pragma once
// Content-addressed files: <root>/blobs/sha256-<hex>, written only by renaming a complete, fsynced,
// verified temp file from <root>/tmp, so a file under blobs/ is always whole and matches its name.
// Stateless apart from the root path: every call works on the filesystem, any thread may call any
// method, and two processes importing the same bytes both succeed (the second rename replaces the
// first with identical content).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <utility>
#include <vector>

#include "store/blob_writer.h"
#include "store/digest.h"
#include "util/result.h"

namespace rc::store {

namespace detail {
class remove_guard;
}

enum class import_mode {
    copy,  // the source stays where it is
    move,  // the source is renamed into the store (copied then removed across filesystems)
};

class blob_store {
  public:
    explicit blob_store(std::filesystem::path root) : root_(std::move(root)) {}
    const std::filesystem::path & root() const { return root_; }
    std::filesystem::path dir() const { return root_ / "blobs"; }

    std::filesystem::path path(const blob_digest & d) const { return dir() / d.str(); }
    bool has(const blob_digest & d) const;
    result<uint64_t> size(const blob_digest & d) const;  // errc::not_found when absent

    // Hashes `src` while copying it into tmp/ (or renames it there, for move), then stores it. With
    // `expected`, a mismatch is errc::invalid_argument, the temp file is removed, blobs/ is
    // unchanged and a moved source is put back. Only regular files are accepted; a move of a file
    // with other hard links copies instead, so no outside name can alter a stored blob.
    result<blob_digest> import_file(const std::filesystem::path & src, const std::optional<blob_digest> & expected = std::nullopt,
                                    import_mode mode = import_mode::copy);

    // A file a downloader already hashed: re-hashed here anyway (a blob must never be trusted on
    // someone's word) and moved in; on failure the file is left where it was.
    result<blob_digest> adopt(const std::filesystem::path & file, const blob_digest & digest) {
        return import_file(file, digest, import_mode::move);
    }

    result<blob_writer> begin_write();

    status remove(const blob_digest & d);  // errc::not_found when absent
    std::vector<blob_digest> list() const;  // sorted; files under blobs/ with other names are ignored

  private:
    friend class blob_writer;
    // Moves a complete, fsynced temp file into blobs/ under `actual` (after checking `expected`);
    // releases `guard` once the temp file has been renamed.
    result<blob_digest> commit_temp(const std::filesystem::path & tmp, detail::remove_guard & guard, uint64_t size,
                                    const blob_digest & actual, const std::optional<blob_digest> & expected);

    std::filesystem::path root_;
};

}  // namespace rc::store
