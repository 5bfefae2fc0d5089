#pragma once
// A host's release artifacts and installed versions, under the agent's data directory:
//
//   <data>/downloads/<sha256>.tar.gz      a verified artifact (.part while it downloads: resumable)
//   <data>/versions/<V>/                  an unpacked release tree (bin/ lib/ share/ VERSION, as shipped)
//   <data>/versions/<V>/.artifact-sha256  the SHA-256 of the tarball it came from
//   <data>/versions/current -> <V>        what the agent runs (`current/bin/rustycage serve`)
//   <data>/versions/previous -> <U>       what it ran before, for rollback
//
// The same layout as install.sh's /opt/rustycage (docs/RELEASING.md), kept per agent so hosts that
// share a machine (tests, labs) stay apart.
//
// Contract:
// * Verify before unpack: fetch_artifact only ever leaves a file whose SHA-256 equals the one asked
//   for; a mismatch deletes what was downloaded (errc::data_loss) and nothing reaches versions/.
// * Resumable: an HTTP download cut off in transit keeps its .part (up to k_resume_keep_max_bytes)
//   and continues with a Range request (re-hashing what is there first); a server that ignores the
//   range restarts it from zero. Any other failure (a local copy, a full disk, a refused source)
//   removes the .part, and a new download removes the .part files of other artifacts.
// * Links switch atomically (a new link renamed over the old one).
// * One thread uses these at a time per data directory (the agent's rollout thread).
#include <atomic>
#include <filesystem>
#include <optional>
#include <string>

#include "util/result.h"

namespace rc::fleet {
struct rollout_spec;
}

namespace rc::fleet {

namespace fs = std::filesystem;

extern const uint64_t k_resume_keep_max_bytes;

// Where a rollout's signature is: its own field, else the artifact's URL or path + ".sig".
std::string signature_source(const rollout_spec & spec);
// A signature file (at most 64 KiB) from an http(s) URL, a file:// URL or an absolute path.
result<std::string> fetch_signature(const std::string & source);
// Why a host with the keys of `trusted_keys` (a PEM file; empty: none) must not unpack the artifact
// `spec` names ("refused: …; nothing was unpacked"), or "" when its signature verifies. Without keys
// every artifact is refused, unless `allow_unsigned` (then none is checked).
std::string signature_refusal(const rollout_spec & spec, const fs::path & trusted_keys, bool allow_unsigned, const std::string & rollout_id);

// `source`: http(s) URL, file:// URL or a path. Returns the verified tarball's path.
// Errors: invalid_argument (bad source), data_loss (wrong SHA-256), unavailable (transfer), io.
result<fs::path> fetch_artifact(const std::string & source, const std::string & sha256, const fs::path & data_dir,
                                const std::atomic<bool> * cancel = nullptr);

// Unpacks into versions/<version> (a no-op when that version came from the same SHA-256) after
// checking every member name (no absolute paths, no ".."), one top directory, its VERSION saying
// `version` and an executable bin/rustycage. Returns the version's directory.
result<fs::path> unpack_artifact(const fs::path & tarball, const std::string & sha256, const std::string & version, const fs::path & data_dir);

fs::path versions_dir(const fs::path & data_dir);
// The version `current` (or `previous`) names, or nullopt.
std::optional<std::string> linked_version(const fs::path & data_dir, const std::string & link);
// Points `link` at versions/<version>, or removes it when `version` is empty.
status set_version_link(const fs::path & data_dir, const std::string & link, const std::string & version);
// versions/current/bin/rustycage, resolved, when it exists and is executable: what the agent runs.
std::optional<fs::path> installed_server_binary(const fs::path & data_dir);
// Removes versions other than current, previous and the `keep` newest.
void prune_versions(const fs::path & data_dir, size_t keep = 3);

}  // namespace rc::fleet
