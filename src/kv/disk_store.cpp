#include "kv/disk_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "util/log.h"

namespace rc::kv {

namespace fs = std::filesystem;

namespace {

constexpr char k_magic[8] = {'R', 'C', 'K', 'V', 'B', 'L', 'K', '1'};
constexpr uint32_t k_version = 2;  // 1: SHA-256 checksum (dropped on open, not counted as corrupt)

// Fixed little-endian layout (x86/ARM); offsets are part of the on-disk format.
struct header_fields {
    char magic[8];
    uint32_t version;
    uint32_t header_bytes;
    uint8_t identity[32];
    uint8_t key[32];
    int32_t pos0;
    int32_t n_tokens;
    uint64_t payload_bytes;
};
static_assert(sizeof(header_fields) == 96);
constexpr size_t k_checksum_offset = sizeof(header_fields);  // the XXH3-64 follows

uint64_t checksum(const header_fields & h, const uint8_t * payload, size_t n) {
    // The state's layout is private to the shared library: allocated by it.
    std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(), &XXH3_freeState);
    XXH3_64bits_reset(state.get());
    XXH3_64bits_update(state.get(), &h, sizeof h);
    XXH3_64bits_update(state.get(), payload, n);
    return XXH3_64bits_digest(state.get());
}

// Opens a file of the tier, which must be a regular file: a symlink is not followed (O_NOFOLLOW)
// and a FIFO or device is not waited on (O_NONBLOCK: open() of a FIFO blocked the I/O thread for
// ever, and every user of the model with it). -1 with errno ENOTSUP for anything not regular.
int open_regular(const fs::path & p, int flags) {
    int fd = ::open(p.c_str(), flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    struct stat st{};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        errno = ENOTSUP;
        return -1;
    }
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

bool write_all(int fd, const void * data, size_t n) {
    auto * p = static_cast<const uint8_t *>(data);
    while (n > 0) {
        ssize_t w = ::write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        p += w;
        n -= static_cast<size_t>(w);
    }
    return true;
}

bool read_all(int fd, void * data, size_t n) {
    auto * p = static_cast<uint8_t *>(data);
    while (n > 0) {
        ssize_t r = ::read(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        p += r;
        n -= static_cast<size_t>(r);
    }
    return true;
}

bool parse_hex_key(const std::string & stem, block_key & out) {
    if (stem.size() != 64) return false;
    for (size_t i = 0; i < 32; ++i) {
        unsigned v = 0;
        for (int k = 0; k < 2; ++k) {
            char c = stem[2 * i + k];
            int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
            if (d < 0) return false;
            v = v * 16 + static_cast<unsigned>(d);
        }
        out.d[i] = static_cast<uint8_t>(v);
    }
    return true;
}

void fsync_dir(const fs::path & dir) {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        ::fsync(fd);
        ::close(fd);
    }
}

std::error_code remove_file(const fs::path & p) {
    std::error_code ec;
    fs::remove(p, ec);  // a file that is already gone is not an error
    return ec;
}

bool header_matches(const header_fields & h, const digest256 & identity, const block_key & key) {
    return std::memcmp(h.magic, k_magic, sizeof k_magic) == 0 && h.version == k_version && h.header_bytes == disk_store::header_bytes &&
           std::memcmp(h.identity, identity.data(), 32) == 0 && std::memcmp(h.key, key.d.data(), 32) == 0;
}

}  // namespace

fs::path disk_store::path_of(const block_key & key) const { return dir_ / (key.hex() + ".kvb"); }

result<std::unique_ptr<disk_store>> disk_store::open(const fs::path & dir, size_t budget, const digest256 & identity, remove_fn remove) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (!fs::is_directory(dir, ec)) return make_error(errc::io, "cannot create KV disk directory " + dir.string());
    std::unique_ptr<disk_store> s(new disk_store(dir, budget, identity, remove ? std::move(remove) : remove_fn(remove_file)));

    struct found {
        block_key key;
        size_t bytes;
        fs::file_time_type mtime;
    };
    std::vector<found> valid;
    uint64_t old_format = 0, undeletable = 0;
    auto discard = [&](const fs::path & p, size_t bytes) {
        if (!s->remove_(p)) return;
        // It stays on disk (a read-only or immutable directory): its bytes still count, never served.
        ++undeletable;
        s->used_ += bytes;
        s->stuck_bytes_ += bytes;
    };
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const auto & p = it->path();
        std::error_code size_ec;
        const size_t size = fs::file_size(p, size_ec);
        if (p.extension() == ".tmp") {  // an interrupted write: never renamed, never indexed
            discard(p, size_ec ? 0 : size);
            continue;
        }
        if (p.extension() != ".kvb") continue;
        block_key key;
        header_fields h{};
        bool ok = parse_hex_key(p.stem().string(), key);
        int fd = ok ? open_regular(p, O_RDONLY) : -1;
        ok = fd >= 0 && read_all(fd, &h, sizeof h);
        if (fd >= 0) ::close(fd);
        if (ok && std::memcmp(h.magic, k_magic, sizeof k_magic) == 0 && h.version != k_version) {
            ++old_format;  // a block of another format version: not corrupt, just unreadable here
            discard(p, size_ec ? 0 : size);
            continue;
        }
        ok = ok && !size_ec && header_matches(h, identity, key) && size == header_bytes + h.payload_bytes;
        if (!ok) {
            ++s->corrupt_;
            discard(p, size_ec ? 0 : size);
            continue;
        }
        valid.push_back({key, size, fs::last_write_time(p, ec)});
    }
    std::sort(valid.begin(), valid.end(), [](const found & a, const found & b) { return a.mtime > b.mtime; });
    std::vector<block_key> victims;
    {
        std::lock_guard lock(s->mutex_);
        for (const auto & f : valid) {
            s->lru_.push_back({f.key, f.bytes});
            s->index_[f.key] = std::prev(s->lru_.end());
            s->used_ += f.bytes;
            s->largest_payload_ = std::max(s->largest_payload_, f.bytes - header_bytes);
        }
        victims = s->pick_victims(0);  // the budget may have shrunk since the last run
    }
    s->delete_victims(victims);
    if (s->corrupt_ > 0) rc::log::warn("kv", "disk_blocks_dropped", {{"dir", dir.string()}, {"count", s->corrupt_.load()}});
    if (old_format > 0) rc::log::info("kv", "disk_blocks_old_format_dropped", {{"dir", dir.string()}, {"count", old_format}});
    if (undeletable > 0 || s->used_ > s->budget_)
        rc::log::warn("kv", "disk_store_cannot_delete", {{"dir", dir.string()}, {"files", undeletable}, {"bytes_used", s->used_},
                                                        {"budget", s->budget_}});
    rc::log::info("kv", "disk_store_open", {{"dir", dir.string()}, {"blocks", s->index_.size()}, {"bytes", s->used_}});
    return s;
}

std::vector<block_key> disk_store::pick_victims(size_t incoming) {
    std::vector<block_key> victims;
    while (used_ - deleting_bytes_ + incoming > budget_ && !lru_.empty()) {
        const auto & victim = lru_.back();
        deleting_.emplace(victim.key, victim.bytes);
        deleting_bytes_ += victim.bytes;
        victims.push_back(victim.key);
        index_.erase(victim.key);
        changed(false, victim.key);
        lru_.pop_back();
    }
    return victims;
}

bool disk_store::delete_victims(const std::vector<block_key> & victims) {
    bool all = true;
    for (const auto & key : victims) {
        std::error_code ec = remove_(path_of(key));
        std::lock_guard lock(mutex_);
        auto it = deleting_.find(key);
        if (it == deleting_.end()) continue;
        const size_t bytes = it->second;
        deleting_bytes_ -= bytes;
        deleting_.erase(it);
        if (!ec) {
            used_ -= bytes;
            continue;
        }
        // Cannot delete it: keep serving it (as the oldest block) and keep counting its bytes.
        all = false;
        lru_.push_back({key, bytes});
        index_[key] = std::prev(lru_.end());
        changed(true, key);
        rc::log::warn("kv", "disk_block_undeletable", {{"key", key.hex().substr(0, 16)}, {"error", ec.message()}});
    }
    return all;
}

status disk_store::write(const block_key & key, const block_blob & blob) {
    const size_t total = header_bytes + blob.bytes.size();
    if (total > budget_) return make_error(errc::invalid_argument, "block larger than the disk budget");
    std::vector<block_key> victims;
    {
        std::lock_guard lock(mutex_);
        if (auto it = index_.find(key); it != index_.end()) {
            lru_.splice(lru_.begin(), lru_, it->second);
            return {};
        }
        // Another thread writes or deletes this very block right now: same key, same bytes; skip.
        if (writing_.count(key) || deleting_.count(key)) return {};
        victims = pick_victims(total);
        used_ += total;  // reserved until the file is in place (or the write fails)
        writing_.insert(key);
    }
    auto abandon = [&](status st) {
        std::lock_guard lock(mutex_);
        used_ -= total;
        writing_.erase(key);
        return st;
    };
    if (!delete_victims(victims)) {
        bool over;
        {
            std::lock_guard lock(mutex_);
            over = used_ - deleting_bytes_ > budget_;
        }
        if (over) return abandon(make_error(errc::io, "KV disk budget full and older blocks cannot be deleted in " + dir_.string()));
    }

    uint8_t header[header_bytes] = {};
    header_fields h{};
    std::memcpy(h.magic, k_magic, sizeof k_magic);
    h.version = k_version;
    h.header_bytes = header_bytes;
    std::memcpy(h.identity, identity_.data(), 32);
    std::memcpy(h.key, key.d.data(), 32);
    h.pos0 = blob.pos0;
    h.n_tokens = blob.n_tokens;
    h.payload_bytes = blob.bytes.size();
    std::memcpy(header, &h, sizeof h);
    const uint64_t sum = checksum(h, blob.bytes.data(), blob.bytes.size());
    std::memcpy(header + k_checksum_offset, &sum, sizeof sum);

    const fs::path final_path = path_of(key);
    const fs::path tmp_path = dir_ / (key.hex() + "." + std::to_string(::getpid()) + ".tmp");
    int fd = open_regular(tmp_path, O_WRONLY | O_CREAT | O_TRUNC);
    if (fd < 0) return abandon(make_error(errc::io, "cannot create " + tmp_path.string() + ": " + std::strerror(errno)));
    bool ok = write_all(fd, header, sizeof header) && write_all(fd, blob.bytes.data(), blob.bytes.size()) && ::fsync(fd) == 0;
    const int write_errno = errno;
    ::close(fd);
    std::error_code ec;
    if (!ok) {
        fs::remove(tmp_path, ec);
        return abandon(make_error(errc::io, "cannot write " + tmp_path.string() + ": " + std::strerror(write_errno)));
    }
    fs::rename(tmp_path, final_path, ec);
    if (ec) {
        fs::remove(tmp_path, ec);
        return abandon(make_error(errc::io, "cannot rename into " + final_path.string()));
    }
    fsync_dir(dir_);
    std::lock_guard lock(mutex_);
    writing_.erase(key);
    lru_.push_front({key, total});
    index_[key] = lru_.begin();
    changed(true, key);
    return {};
}

void disk_store::drop(const block_key & key, std::atomic<uint64_t> & counter) {
    size_t bytes = 0;
    {
        std::lock_guard lock(mutex_);
        auto it = index_.find(key);
        if (it == index_.end()) return;  // dropped by another reader already
        bytes = it->second->bytes;
        lru_.erase(it->second);
        index_.erase(it);
        changed(false, key);
        deleting_.emplace(key, bytes);
        deleting_bytes_ += bytes;
    }
    ++counter;
    std::error_code ec = remove_(path_of(key));
    std::lock_guard lock(mutex_);
    deleting_.erase(key);
    deleting_bytes_ -= bytes;
    if (ec) stuck_bytes_ += bytes;  // still on disk, never served again: its bytes keep counting
    else used_ -= bytes;
}

result<std::shared_ptr<block_blob>> disk_store::read(const block_key & key, blob_pool * pool) {
    {
        std::lock_guard lock(mutex_);
        auto it = index_.find(key);
        if (it == index_.end()) return make_error(errc::not_found, "block not on disk");
        lru_.splice(lru_.begin(), lru_, it->second);
    }
    int fd = open_regular(path_of(key), O_RDONLY);
    if (fd < 0) {
        if (errno == ENOTSUP || errno == ELOOP) {  // not a regular file (a FIFO, a device, a symlink)
            drop(key, corrupt_);
            rc::log::warn("kv", "disk_block_not_a_file", {{"key", key.hex().substr(0, 16)}, {"dir", dir_.string()}});
            return make_error(errc::data_loss, "a KV block on disk is not a regular file");
        }
        if (errno != ENOENT) return make_error(errc::io, "cannot open a KV block: " + std::string(std::strerror(errno)));
        drop(key, missing_);  // removed behind our back: forget it, it is not corruption
        rc::log::warn("kv", "disk_block_missing", {{"key", key.hex().substr(0, 16)}, {"dir", dir_.string()}});
        return make_error(errc::not_found, "block file vanished");
    }
    uint8_t header[header_bytes];
    header_fields h{};
    std::shared_ptr<block_blob> blob;
    bool ok = read_all(fd, header, sizeof header);
    if (ok) {
        std::memcpy(&h, header, sizeof h);
        ok = header_matches(h, identity_, key) && h.payload_bytes < (1ull << 34) && h.n_tokens > 0 && h.pos0 >= 0;
    }
    // The header is only trusted as far as the file backs it: a block damaged or replaced since
    // open() indexed it must not make us allocate what it claims (found by fuzz_kv_disk_block).
    struct stat st {};
    ok = ok && ::fstat(fd, &st) == 0 && static_cast<uint64_t>(st.st_size) == header_bytes + h.payload_bytes;
    if (ok) {
        blob = pool ? pool->make(h.payload_bytes) : std::make_shared<block_blob>();
        blob->bytes.resize(h.payload_bytes);
        ok = read_all(fd, blob->bytes.data(), blob->bytes.size());
        uint8_t extra;
        ok = ok && ::read(fd, &extra, 1) == 0;  // trailing bytes are corruption too
    }
    ::close(fd);
    if (ok) {
        uint64_t stored;
        std::memcpy(&stored, header + k_checksum_offset, sizeof stored);
        ok = checksum(h, blob->bytes.data(), blob->bytes.size()) == stored;
    }
    if (!ok) {
        drop(key, corrupt_);
        rc::log::warn("kv", "disk_block_corrupt", {{"key", key.hex().substr(0, 16)}, {"dir", dir_.string()}});
        return make_error(errc::invalid_argument, "corrupt KV block dropped");
    }
    blob->pos0 = h.pos0;
    blob->n_tokens = h.n_tokens;
    return blob;
}

void disk_store::will_read(const std::vector<block_key> & keys) const {
    for (const auto & k : keys) {
        int fd = open_regular(path_of(k), O_RDONLY);
        if (fd < 0) continue;
        ::posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED);
        ::close(fd);
    }
}

bool disk_store::contains(const block_key & key) const {
    std::lock_guard lock(mutex_);
    return index_.count(key) > 0;
}

size_t disk_store::bytes_used() const {
    std::lock_guard lock(mutex_);
    return used_;
}

size_t disk_store::largest_payload() const {
    std::lock_guard lock(mutex_);
    return largest_payload_;
}

void disk_store::each_key(const std::function<void(const block_key &)> & f) const {
    std::lock_guard lock(mutex_);
    for (const auto & e : lru_) f(e.key);
}

size_t disk_store::count() const {
    std::lock_guard lock(mutex_);
    return index_.size();
}

// ---- records.log: [u32 length][u64 XXH3-64 of the bytes][bytes], appended.

namespace {
std::vector<uint8_t> frame(const std::vector<uint8_t> & record) {
    std::vector<uint8_t> out(12 + record.size());
    const uint32_t n = static_cast<uint32_t>(record.size());
    const uint64_t sum = XXH3_64bits(record.data(), record.size());
    std::memcpy(out.data(), &n, 4);
    std::memcpy(out.data() + 4, &sum, 8);
    std::memcpy(out.data() + 12, record.data(), record.size());
    return out;
}
}  // namespace

status disk_store::append_record(const std::vector<uint8_t> & record) {
    std::lock_guard lock(records_mutex_);
    const fs::path p = dir_ / "records.log";
    int fd = open_regular(p, O_WRONLY | O_CREAT | O_APPEND);
    if (fd < 0) return make_error(errc::io, "cannot open " + p.string() + ": " + std::strerror(errno));
    auto bytes = frame(record);
    bool ok = write_all(fd, bytes.data(), bytes.size());
    ::close(fd);
    if (!ok) return make_error(errc::io, "cannot append to " + p.string());
    return {};
}

std::vector<std::vector<uint8_t>> disk_store::read_records() const {
    std::vector<std::vector<uint8_t>> out;
    const fs::path p = dir_ / "records.log";
    int fd = open_regular(p, O_RDONLY);
    if (fd < 0) return out;
    for (;;) {
        uint8_t head[12];
        if (!read_all(fd, head, sizeof head)) break;
        uint32_t n;
        uint64_t sum;
        std::memcpy(&n, head, 4);
        std::memcpy(&sum, head + 4, 8);
        if (n > (1u << 20)) break;
        std::vector<uint8_t> rec(n);
        if (!read_all(fd, rec.data(), n) || XXH3_64bits(rec.data(), n) != sum) break;  // a torn or corrupt tail ends the log
        out.push_back(std::move(rec));
    }
    ::close(fd);
    return out;
}

status disk_store::rewrite_records(const std::vector<std::vector<uint8_t>> & records) {
    std::lock_guard lock(records_mutex_);
    const fs::path p = dir_ / "records.log";
    const fs::path tmp = dir_ / ("records." + std::to_string(::getpid()) + ".tmp");
    int fd = open_regular(tmp, O_WRONLY | O_CREAT | O_TRUNC);
    if (fd < 0) return make_error(errc::io, "cannot create " + tmp.string());
    bool ok = true;
    for (const auto & r : records) {
        auto bytes = frame(r);
        ok = ok && write_all(fd, bytes.data(), bytes.size());
    }
    ok = ok && ::fsync(fd) == 0;
    ::close(fd);
    std::error_code ec;
    if (ok) fs::rename(tmp, p, ec);
    if (!ok || ec) {
        fs::remove(tmp, ec);
        return make_error(errc::io, "cannot rewrite " + p.string());
    }
    return {};
}

}  // namespace rc::kv
