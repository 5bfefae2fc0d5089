#include "kv/disk_store.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>

using namespace rc::kv;
namespace fs = std::filesystem;

namespace {
block_key key(uint8_t n) {
    block_key k;
    k.d[0] = n;
    k.d[31] = 0xab;
    return k;
}
block_blob blob(size_t bytes, uint8_t fill, int pos0 = 0) {
    block_blob b;
    b.bytes.resize(bytes);
    for (size_t i = 0; i < bytes; ++i) b.bytes[i] = static_cast<uint8_t>(fill + i);
    b.pos0 = pos0;
    b.n_tokens = 16;
    return b;
}
rc::digest256 identity(uint8_t n = 1) {
    rc::digest256 d{};
    d[0] = n;
    return d;
}

class disk_store_test : public ::testing::Test {
  protected:
    void SetUp() override {
        dir = fs::temp_directory_path() / ("rc-kv-disk-" + std::to_string(getpid()) + "-" +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir);
    }
    void TearDown() override { fs::remove_all(dir); }
    fs::path dir;
};
}  // namespace

TEST_F(disk_store_test, round_trip_and_survives_reopen) {
    {
        auto s = disk_store::open(dir, 1 << 20, identity());
        ASSERT_TRUE(s.ok());
        ASSERT_TRUE(s.value()->write(key(1), blob(1000, 3, 64)).ok());
        ASSERT_TRUE(s.value()->write(key(2), blob(500, 9)).ok());
    }
    auto s = disk_store::open(dir, 1 << 20, identity());
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s.value()->count(), 2u);
    auto b = s.value()->read(key(1));
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(b.value()->bytes, blob(1000, 3).bytes);
    EXPECT_EQ(b.value()->pos0, 64);
    EXPECT_EQ(b.value()->n_tokens, 16);
    EXPECT_EQ(s.value()->read(key(7)).err().code, rc::errc::not_found);
}

TEST_F(disk_store_test, every_flipped_byte_is_detected_dropped_and_counted) {
    auto s = disk_store::open(dir, 1 << 20, identity()).value();
    const auto data = blob(300, 5);
    // Flip one byte at a time across header and payload; none may ever be served.
    for (size_t offset : {size_t(0), size_t(9), size_t(40), size_t(90), size_t(100), size_t(128), size_t(200), size_t(427)}) {
        ASSERT_TRUE(s->write(key(1), data).ok());
        fs::path p = dir / (key(1).hex() + ".kvb");
        {
            std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
            f.seekg(static_cast<std::streamoff>(offset));
            char c;
            f.get(c);
            f.seekp(static_cast<std::streamoff>(offset));
            f.put(static_cast<char>(c ^ 0x5a));
        }
        uint64_t before = s->corrupt_dropped();
        auto r = s->read(key(1));
        EXPECT_FALSE(r.ok()) << "flipped byte at " << offset << " was served";
        EXPECT_EQ(s->corrupt_dropped(), before + 1);
        EXPECT_FALSE(s->contains(key(1)));
        EXPECT_FALSE(fs::exists(p));
    }
}

TEST_F(disk_store_test, a_header_claiming_more_than_the_file_holds_allocates_nothing) {
    // Found by fuzz_kv_disk_block: a block file damaged after open() indexed it, whose header
    // claims a gigabyte payload, made read() allocate (and zero) that much before noticing.
    auto s = disk_store::open(dir, 1 << 20, identity()).value();
    ASSERT_TRUE(s->write(key(1), blob(300, 5)).ok());
    {
        std::fstream f(dir / (key(1).hex() + ".kvb"), std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(88);  // payload_bytes, after magic, version, header size, identity, key, pos0, n_tokens
        const uint64_t claimed = uint64_t(1) << 30;
        f.write(reinterpret_cast<const char *>(&claimed), sizeof claimed);
    }
    auto peak_kb = [] {
        rusage u{};
        getrusage(RUSAGE_SELF, &u);
        return u.ru_maxrss;
    };
    const long before = peak_kb();
    auto r = s->read(key(1));
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(s->corrupt_dropped(), 1u);
    EXPECT_LT(peak_kb() - before, 256 * 1024) << "read() allocated what the header claimed";
}

TEST_F(disk_store_test, bad_headers_and_temp_files_are_dropped_on_open) {
    {
        auto s = disk_store::open(dir, 1 << 20, identity()).value();
        ASSERT_TRUE(s->write(key(1), blob(100, 1)).ok());
        ASSERT_TRUE(s->write(key(2), blob(100, 2)).ok());
    }
    std::ofstream(dir / "garbage.tmp") << "half a block";
    std::ofstream(dir / (key(3).hex() + ".kvb")) << "not a block";
    fs::resize_file(dir / (key(2).hex() + ".kvb"), 150);  // truncated
    auto s = disk_store::open(dir, 1 << 20, identity()).value();
    EXPECT_EQ(s->count(), 1u);
    EXPECT_TRUE(s->contains(key(1)));
    EXPECT_EQ(s->corrupt_dropped(), 2u);
    EXPECT_FALSE(fs::exists(dir / "garbage.tmp"));
    // Another model's identity sees none of these blocks.
    auto other = disk_store::open(dir, 1 << 20, identity(2)).value();
    EXPECT_EQ(other->count(), 0u);
}

TEST_F(disk_store_test, budget_is_hard_lru_deleted_first_also_after_shrinking) {
    const size_t block = disk_store::header_bytes + 1000;
    auto s = disk_store::open(dir, 3 * block, identity()).value();
    for (uint8_t i = 1; i <= 3; ++i) ASSERT_TRUE(s->write(key(i), blob(1000, i)).ok());
    ASSERT_TRUE(s->read(key(1)).ok());  // 1 most recent, 2 least
    ASSERT_TRUE(s->write(key(4), blob(1000, 4)).ok());
    EXPECT_LE(s->bytes_used(), s->budget());
    EXPECT_FALSE(s->contains(key(2)));
    EXPECT_TRUE(s->contains(key(1)));
    EXPECT_EQ(s->write(key(9), blob(10 * block, 0)).err().code, rc::errc::invalid_argument);
    s.reset();
    auto small = disk_store::open(dir, 2 * block, identity()).value();
    EXPECT_LE(small->bytes_used(), 2 * block);
    EXPECT_EQ(small->count(), 2u);
}
