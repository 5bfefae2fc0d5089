#pragma once
// The on-disk model store: named manifests over content-addressed blobs.
//
//   <root>/blobs/sha256-<hex>                         blob_store
//   <root>/manifests/<host>/<namespace>/<model>/<tag> one manifest per name (JSON)
//   <root>/tmp/                                       temp files, renamed into place when complete
//   <root>/.store.lock                                writers' flock
//
// Readers (list, find) take no lock: manifests are replaced by rename, so a reader sees a whole
// old or a whole new file. Writers (put, copy, remove, set_status) hold store_lock, so they are
// serialised across threads and processes. Blobs are written outside the lock; put() checks under
// the lock that every blob it references exists, so a blob collected by a concurrent remove() makes
// that put fail cleanly (retry) rather than leave a manifest pointing at nothing.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "store/blob_store.h"
#include "store/manifest.h"
#include "store/model_name.h"
#include "store/store_lock.h"
#include "store/timestamps.h"
#include "util/result.h"

namespace rc::store {

struct model_record {
    model_name name;
    manifest m;
    std::vector<std::filesystem::path> model_paths;  // blobs of the "model" layers, in order (split GGUF)
    uint64_t total_size = 0;                         // all layers
    sys_time modified{};                             // the manifest file's mtime
};

class model_store {
  public:
    explicit model_store(std::filesystem::path root);
    const std::filesystem::path & root() const { return root_; }
    blob_store & blobs() { return blobs_; }
    const blob_store & blobs() const { return blobs_; }

    // Every valid model, sorted by display name. A manifest that cannot be read or parsed, or whose
    // blobs are missing, is skipped with a warning: one bad file must not hide the others.
    std::vector<model_record> list() const;

    // Errors: invalid_argument (bad name or manifest), not_found (no such model, or a blob missing).
    result<model_record> find(std::string_view name) const;
    result<model_record> find(const model_name & name) const;

    // Writes `m` as `name`'s manifest (m.name is set to name.full(); a default created_at becomes
    // now). Refused with invalid_argument unless it has a model layer and every layer's blob exists
    // with the recorded size. Replacing a manifest collects the blobs only the old one used.
    status put(const model_name & name, manifest m);

    // `dst` gets src's layers, settings and status (a copy never launders a quarantine), with
    // source {kind: copy, repo: src's full name}. An existing dst is replaced.
    status copy(std::string_view src, std::string_view dst);

    // Deletes the manifest and its now-empty parent directories, then the blobs no other manifest
    // references. Errors: not_found.
    status remove(std::string_view name);

    // ready/failed record checked_at = now; quarantined clears it.
    status set_status(std::string_view name, model_status s, std::string reason = {});

  private:
    result<manifest> read_manifest(const model_name & name) const;
    result<model_record> make_record(const model_name & name, manifest m) const;
    status check_layers(const manifest & m) const;
    // put() under the lock: write, then collect blobs the replaced manifest no longer shares.
    status write_locked(const model_name & name, const manifest & m);
    void collect_garbage_locked(const std::vector<layer> & candidates);

    std::filesystem::path root_;
    blob_store blobs_;
    store_lock lock_;
};

}  // namespace rc::store
