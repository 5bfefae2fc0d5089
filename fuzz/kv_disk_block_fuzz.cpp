// The KV disk tier's block reader (kv/disk_store): a block file with arbitrary bytes is indexed at
// open() and read back with read(). The input's first half is the file open() sees, its second
// half what is on disk by the time read() runs (a file replaced or damaged between the two).
// Whatever the bytes, the store must refuse corrupt blocks (deleting and counting them), never
// crash, and never allocate what the file does not hold.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "kv/disk_store.h"
#include "util/log.h"

namespace {

namespace fs = std::filesystem;

const fs::path & scratch_dir() {
    static const fs::path p = [] {
        char tmpl[] = "/tmp/rc-fuzz-kv-XXXXXX";
        return fs::path(::mkdtemp(tmpl) ? tmpl : "/tmp/rc-fuzz-kv");
    }();
    return p;
}

rc::kv::block_key fixed_key() {
    rc::kv::block_key k;
    for (size_t i = 0; i < k.d.size(); ++i) k.d[i] = static_cast<uint8_t>(0xa0 + i);
    return k;
}

rc::digest256 fixed_identity() {
    rc::digest256 d{};
    for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<uint8_t>(i);
    return d;
}

void write(const fs::path & p, const uint8_t * data, size_t n) {
    std::ofstream(p, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char *>(data), static_cast<std::streamsize>(n));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    rc::log::set_level(rc::log::level::error);  // every dropped block would log a warning
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    const fs::path & dir = scratch_dir();
    const auto key = fixed_key();
    const fs::path file = dir / (key.hex() + ".kvb");
    const size_t half = size / 2;
    write(file, data, half);
    auto store = rc::kv::disk_store::open(dir, size_t(1) << 30, fixed_identity());
    if (!store) std::abort();  // the directory is fine; only blocks can be bad
    if ((*store)->contains(key)) {
        write(file, data + half, size - half);
        auto blob = (*store)->read(key);
        if (!blob && (*store)->contains(key)) std::abort();  // a refused block is dropped
        if (blob && (*blob)->n_tokens <= 0) std::abort();
    } else if (half > 0 && fs::exists(file)) {
        std::abort();  // a file it did not index (corrupt, or of an older format) must have been dropped
    }
    std::error_code ec;
    fs::remove(file, ec);
    return 0;
}
