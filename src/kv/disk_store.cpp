#include "kv/disk_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "util/log.h"

namespace rc::kv {

namespace fs = std::filesystem;

namespace {

constexpr char k_magic[8] = {'R', 'C', 'K', 'V', 'B', 'L', 'K', '1'};
constexpr uint32_t k_version = 1;

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
constexpr size_t k_checksum_offset = sizeof(header_fields);  // 32-byte SHA-256 follows

digest256 checksum(const header_fields & h, const uint8_t * payload, size_t n) {
    return sha256().feed(&h, sizeof h).feed(payload, n).finish();
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

}  // namespace

fs::path disk_store::path_of(const block_key & key) const { return dir_ / (key.hex() + ".kvb"); }

result<std::unique_ptr<disk_store>> disk_store::open(const fs::path & dir, size_t budget, const digest256 & identity) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (!fs::is_directory(dir, ec)) return make_error(errc::io, "cannot create KV disk directory " + dir.string());
    std::unique_ptr<disk_store> s(new disk_store(dir, budget, identity));

    struct found {
        block_key key;
        size_t bytes;
        fs::file_time_type mtime;
    };
    std::vector<found> valid;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const auto & p = it->path();
        if (p.extension() == ".tmp") {  // an interrupted write: never renamed, never indexed
            fs::remove(p, ec);
            continue;
        }
        if (p.extension() != ".kvb") continue;
        block_key key;
        header_fields h{};
        bool ok = parse_hex_key(p.stem().string(), key);
        int fd = ok ? ::open(p.c_str(), O_RDONLY) : -1;
        ok = fd >= 0 && read_all(fd, &h, sizeof h);
        if (fd >= 0) ::close(fd);
        size_t size = fs::file_size(p, ec);
        ok = ok && std::memcmp(h.magic, k_magic, sizeof k_magic) == 0 && h.version == k_version && h.header_bytes == header_bytes &&
             std::memcmp(h.identity, identity.data(), 32) == 0 && std::memcmp(h.key, key.d.data(), 32) == 0 &&
             size == header_bytes + h.payload_bytes;
        if (!ok) {
            fs::remove(p, ec);
            ++s->corrupt_;
            continue;
        }
        valid.push_back({key, size, fs::last_write_time(p, ec)});
    }
    std::sort(valid.begin(), valid.end(), [](const found & a, const found & b) { return a.mtime > b.mtime; });
    for (const auto & f : valid) {
        s->lru_.push_back({f.key, f.bytes});
        s->index_[f.key] = std::prev(s->lru_.end());
        s->used_ += f.bytes;
    }
    {
        std::lock_guard lock(s->mutex_);
        s->evict_to_fit(0);  // the budget may have shrunk since the last run
    }
    if (s->corrupt_ > 0) rc::log::warn("kv", "disk_blocks_dropped", {{"dir", dir.string()}, {"count", s->corrupt_.load()}});
    rc::log::info("kv", "disk_store_open", {{"dir", dir.string()}, {"blocks", s->index_.size()}, {"bytes", s->used_}});
    return s;
}

void disk_store::evict_to_fit(size_t incoming) {
    std::error_code ec;
    while (used_ + incoming > budget_ && !lru_.empty()) {
        const auto & victim = lru_.back();
        fs::remove(path_of(victim.key), ec);
        used_ -= victim.bytes;
        index_.erase(victim.key);
        lru_.pop_back();
    }
}

status disk_store::write(const block_key & key, const block_blob & blob) {
    const size_t total = header_bytes + blob.bytes.size();
    if (total > budget_) return make_error(errc::invalid_argument, "block larger than the disk budget");
    {
        std::lock_guard lock(mutex_);
        if (auto it = index_.find(key); it != index_.end()) {
            lru_.splice(lru_.begin(), lru_, it->second);
            return {};
        }
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
    digest256 sum = checksum(h, blob.bytes.data(), blob.bytes.size());
    std::memcpy(header + k_checksum_offset, sum.data(), sum.size());

    const fs::path final_path = path_of(key);
    const fs::path tmp_path = dir_ / (key.hex() + "." + std::to_string(::getpid()) + ".tmp");
    int fd = ::open(tmp_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return make_error(errc::io, "cannot create " + tmp_path.string() + ": " + std::strerror(errno));
    bool ok = write_all(fd, header, sizeof header) && write_all(fd, blob.bytes.data(), blob.bytes.size()) && ::fsync(fd) == 0;
    ::close(fd);
    std::error_code ec;
    if (!ok) {
        fs::remove(tmp_path, ec);
        return make_error(errc::io, "cannot write " + tmp_path.string() + ": " + std::strerror(errno));
    }
    std::lock_guard lock(mutex_);
    if (index_.count(key)) {  // another writer won the race; same key, same bytes
        fs::remove(tmp_path, ec);
        return {};
    }
    evict_to_fit(total);
    fs::rename(tmp_path, final_path, ec);
    if (ec) {
        fs::remove(tmp_path, ec);
        return make_error(errc::io, "cannot rename into " + final_path.string());
    }
    fsync_dir(dir_);
    lru_.push_front({key, total});
    index_[key] = lru_.begin();
    used_ += total;
    return {};
}

void disk_store::drop_corrupt(const block_key & key) {
    std::error_code ec;
    std::lock_guard lock(mutex_);
    if (auto it = index_.find(key); it != index_.end()) {
        used_ -= it->second->bytes;
        lru_.erase(it->second);
        index_.erase(it);
    }
    fs::remove(path_of(key), ec);
    ++corrupt_;
    rc::log::warn("kv", "disk_block_corrupt", {{"key", key.hex().substr(0, 16)}, {"dir", dir_.string()}});
}

result<std::shared_ptr<block_blob>> disk_store::read(const block_key & key) {
    {
        std::lock_guard lock(mutex_);
        auto it = index_.find(key);
        if (it == index_.end()) return make_error(errc::not_found, "block not on disk");
        lru_.splice(lru_.begin(), lru_, it->second);
    }
    int fd = ::open(path_of(key).c_str(), O_RDONLY);
    if (fd < 0) {
        drop_corrupt(key);  // indexed but gone: never serve it
        return make_error(errc::io, "block file vanished");
    }
    uint8_t header[header_bytes];
    header_fields h{};
    auto blob = std::make_shared<block_blob>();
    bool ok = read_all(fd, header, sizeof header);
    if (ok) {
        std::memcpy(&h, header, sizeof h);
        ok = std::memcmp(h.magic, k_magic, sizeof k_magic) == 0 && h.version == k_version && h.header_bytes == header_bytes &&
             std::memcmp(h.identity, identity_.data(), 32) == 0 && std::memcmp(h.key, key.d.data(), 32) == 0 &&
             h.payload_bytes < (1ull << 34) && h.n_tokens > 0 && h.pos0 >= 0;
    }
    // The header is only trusted as far as the file backs it: a block damaged or replaced since
    // open() indexed it must not make us allocate what it claims (found by fuzz_kv_disk_block).
    struct stat st {};
    ok = ok && ::fstat(fd, &st) == 0 && static_cast<uint64_t>(st.st_size) == header_bytes + h.payload_bytes;
    if (ok) {
        blob->bytes.resize(h.payload_bytes);
        ok = read_all(fd, blob->bytes.data(), blob->bytes.size());
        uint8_t extra;
        ok = ok && ::read(fd, &extra, 1) == 0;  // trailing bytes are corruption too
    }
    ::close(fd);
    if (ok) {
        digest256 sum = checksum(h, blob->bytes.data(), blob->bytes.size());
        ok = std::memcmp(sum.data(), header + k_checksum_offset, sum.size()) == 0;
    }
    if (!ok) {
        drop_corrupt(key);
        return make_error(errc::invalid_argument, "corrupt KV block dropped");
    }
    blob->pos0 = h.pos0;
    blob->n_tokens = h.n_tokens;
    return blob;
}

bool disk_store::contains(const block_key & key) const {
    std::lock_guard lock(mutex_);
    return index_.count(key) > 0;
}

size_t disk_store::bytes_used() const {
    std::lock_guard lock(mutex_);
    return used_;
}

size_t disk_store::count() const {
    std::lock_guard lock(mutex_);
    return index_.size();
}

}  // namespace rc::kv
