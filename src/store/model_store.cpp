#include "store/model_store.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <set>

#include "store/file_io.h"
#include "util/log.h"
#include "util/small_file.h"
#include "util/utf8.h"

namespace rc::store {

namespace fs = std::filesystem;

namespace {

constexpr size_t k_max_manifest_bytes = manifest_limits::max_read_bytes;
// A quarantine verdict can quote llama.cpp at length; the manifest keeps the start of it.
constexpr size_t k_max_status_reason = 2000;

bool is_real_dir(const fs::directory_entry & e) {
    std::error_code ec;
    return e.symlink_status(ec).type() == fs::file_type::directory;
}

// Every regular file at manifests/<host>/<ns>/<model>/<tag>; symlinks are not followed, so the
// walk stays inside the store whatever someone put there.
std::vector<fs::path> manifest_files(const fs::path & dir) {
    std::vector<fs::path> out;
    auto walk = [&](auto & self, const fs::path & d, int depth) -> void {
        std::error_code ec;
        for (fs::directory_iterator it(d, ec), end; !ec && it != end; it.increment(ec)) {
            if (depth < 3) {
                if (is_real_dir(*it)) self(self, it->path(), depth + 1);
            } else if (it->symlink_status(ec).type() == fs::file_type::regular) {
                out.push_back(it->path());
            }
        }
    };
    walk(walk, dir, 0);
    return out;
}

// The name a manifest file stands for, if its path is a canonical name's path.
std::optional<model_name> name_of_file(const fs::path & manifests_dir, const fs::path & file) {
    std::vector<std::string> parts;
    for (const auto & p : file.lexically_relative(manifests_dir)) parts.push_back(p.string());
    if (parts.size() != 4) return std::nullopt;
    auto n = model_name::parse(parts[0] + "/" + parts[1] + "/" + parts[2] + ":" + parts[3]);
    if (!n || n->host != parts[0] || n->ns != parts[1] || n->model != parts[2] || n->tag != parts[3]) return std::nullopt;
    return n.value();
}

sys_time mtime_of(const fs::path & p) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) return {};
    auto t = std::chrono::system_clock::from_time_t(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec);
    return std::chrono::time_point_cast<sys_time::duration>(t);
}

sys_time now() { return std::chrono::system_clock::now(); }

}  // namespace

model_store::model_store(fs::path root) : root_(std::move(root)), blobs_(root_), lock_(root_ / ".store.lock") {}

result<manifest> model_store::read_manifest(const model_name & name) const {
    auto text = rc::read_small_file(name.manifest_path(root_), k_max_manifest_bytes);
    if (!text) {
        if (text.err().code == errc::not_found) return make_error(errc::not_found, "model '" + name.display() + "' not found");
        return make_error(text.err().code, "model '" + name.display() + "': " + text.err().message);
    }
    auto m = parse_manifest(text.value());
    if (!m) return make_error(m.err().code, "model '" + name.display() + "': " + m.err().message);
    m->name = name.full();  // the file's place is its identity, whatever the text claims
    return m;
}

status model_store::check_layers(const manifest & m) const {
    if (!m.first_model_layer()) return make_error(errc::invalid_argument, "manifest of '" + m.name + "' has no model layer");
    for (const auto & l : m.layers) {
        if (l.digest.empty()) return make_error(errc::invalid_argument, "a layer of '" + m.name + "' has no digest");
        auto size = blobs_.size(l.digest);
        if (!size) return make_error(errc::not_found, "blob " + l.digest.str() + " of '" + m.name + "' is missing");
        if (*size != l.size)
            return make_error(errc::invalid_argument, "blob " + l.digest.str() + " of '" + m.name + "' has " + std::to_string(*size) +
                                                          " bytes, the manifest says " + std::to_string(l.size));
    }
    return {};
}

result<model_record> model_store::make_record(const model_name & name, manifest m) const {
    if (auto st = check_layers(m); !st) return st.err();
    model_record r;
    r.name = name;
    for (const auto & l : m.layers) {
        if (l.kind == layer_kind::model) r.model_paths.push_back(blobs_.path(l.digest));
    }
    r.total_size = m.total_size();
    r.modified = mtime_of(name.manifest_path(root_));
    r.m = std::move(m);
    return r;
}

std::vector<model_record> model_store::list() const {
    std::vector<model_record> out;
    const fs::path dir = root_ / "manifests";
    for (const auto & file : manifest_files(dir)) {
        auto name = name_of_file(dir, file);
        if (!name) {
            log::warn("store", "manifest_skipped", {{"path", file.string()}, {"reason", "path is not a canonical model name"}});
            continue;
        }
        auto m = read_manifest(*name);
        auto r = m ? make_record(*name, std::move(m.value())) : result<model_record>(m.err());
        if (!r) {
            log::warn("store", "manifest_skipped", {{"path", file.string()}, {"reason", r.err().message}});
            continue;
        }
        out.push_back(std::move(r.value()));
    }
    std::sort(out.begin(), out.end(), [](const model_record & a, const model_record & b) { return a.name.display() < b.name.display(); });
    return out;
}

result<model_record> model_store::find(std::string_view text) const {
    auto name = model_name::parse(text);
    if (!name) return name.err();
    return find(name.value());
}

result<model_record> model_store::find(const model_name & name) const {
    auto m = read_manifest(name);
    if (!m) return m.err();
    return make_record(name, std::move(m.value()));
}

status model_store::write_locked(const model_name & name, const manifest & m) {
    if (auto st = check_writable(m); !st) return st;
    if (auto st = check_layers(m); !st) return st;
    auto old = read_manifest(name);
    if (auto st = detail::write_file_atomic(name.manifest_path(root_), serialize(m), root_ / "tmp"); !st) return st;
    if (old) collect_garbage_locked(old->layers);
    return {};
}

status model_store::put(const model_name & name, manifest m) {
    m.name = name.full();
    if (m.created_at == sys_time{}) m.created_at = now();
    auto g = lock_.acquire();
    if (!g) return g.err();
    return write_locked(name, m);
}

status model_store::copy(std::string_view src_text, std::string_view dst_text) {
    auto src = model_name::parse(src_text);
    if (!src) return src.err();
    auto dst = model_name::parse(dst_text);
    if (!dst) return dst.err();
    if (*src == *dst) return make_error(errc::invalid_argument, "cannot copy '" + src->display() + "' onto itself");
    auto g = lock_.acquire();
    if (!g) return g.err();
    auto m = read_manifest(*src);
    if (!m) return m.err();
    m->name = dst->full();
    m->source = model_source{source_kind::copy, src->full(), "", {}};
    m->created_at = now();
    return write_locked(*dst, m.value());
}

status model_store::remove(std::string_view text) {
    auto name = model_name::parse(text);
    if (!name) return name.err();
    auto g = lock_.acquire();
    if (!g) return g.err();
    const fs::path file = name->manifest_path(root_);
    auto m = read_manifest(*name);  // may be unreadable: the file is removed all the same
    if (::unlink(file.c_str()) != 0) {
        if (errno == ENOENT) return make_error(errc::not_found, "model '" + name->display() + "' not found");
        return detail::io_error("cannot remove", file, errno);
    }
    if (auto st = detail::fsync_dir(file.parent_path()); !st) return st;
    // rmdir refuses non-empty directories, which is exactly the "now empty" test.
    const fs::path manifests = root_ / "manifests";
    for (fs::path d = file.parent_path(); d != manifests && ::rmdir(d.c_str()) == 0; d = d.parent_path()) {}
    if (m) collect_garbage_locked(m->layers);
    return {};
}

status model_store::set_status(std::string_view text, model_status s, std::string reason) {
    auto name = model_name::parse(text);
    if (!name) return name.err();
    auto g = lock_.acquire();
    if (!g) return g.err();
    auto m = read_manifest(*name);
    if (!m) return m.err();
    m->status = s;
    if (reason.size() > k_max_status_reason) reason = reason.substr(0, utf8::complete_prefix_length(reason.substr(0, k_max_status_reason))) + "…";
    m->status_reason = std::move(reason);
    m->checked_at = s == model_status::quarantined ? std::nullopt : std::optional<sys_time>(now());
    if (auto st = check_writable(m.value()); !st) return st;
    return detail::write_file_atomic(name->manifest_path(root_), serialize(m.value()), root_ / "tmp");
}

void model_store::collect_garbage_locked(const std::vector<layer> & candidates) {
    std::set<blob_digest> referenced;
    std::vector<std::string> unreadable;  // raw text of manifests this build cannot parse
    for (const auto & file : manifest_files(root_ / "manifests")) {
        auto text = rc::read_small_file(file, k_max_manifest_bytes);
        if (!text) continue;
        if (auto m = parse_manifest(text.value())) {
            for (const auto & l : m->layers) referenced.insert(l.digest);
        } else {
            unreadable.push_back(std::move(text.value()));
        }
    }
    for (const auto & l : candidates) {
        if (referenced.count(l.digest)) continue;
        // A manifest we cannot parse (damaged, or from a newer build) may still need its blobs:
        // keep any blob whose hex appears in it rather than guess.
        bool maybe_used = std::any_of(unreadable.begin(), unreadable.end(),
                                      [&](const std::string & t) { return t.find(l.digest.hex()) != std::string::npos; });
        if (maybe_used) continue;
        referenced.insert(l.digest);  // a digest listed twice is removed once
        if (auto st = blobs_.remove(l.digest); !st && st.err().code != errc::not_found)
            log::warn("store", "blob_not_removed", {{"digest", l.digest.str()}, {"reason", st.err().message}});
        else if (st)
            log::info("store", "blob_removed", {{"digest", l.digest.str()}});
    }
}

}  // namespace rc::store
