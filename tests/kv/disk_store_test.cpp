#include "kv/disk_store.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>

#include "support/temp_dir.h"
#include "test_keys.h"

using namespace rc::kv;
namespace fs = std::filesystem;

namespace {
using test::key;
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
    rc::test::temp_dir tmp_{"kv-disk"};  // fresh for each test, removed after it
    const fs::path dir = tmp_.path();
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

// Issue 10: a directory whose files cannot be deleted (read-only, `chattr +i`). Its blocks stay
// indexed and counted, so the budget holds: writes that would need their space are refused.
TEST_F(disk_store_test, undeletable_files_keep_counting_and_the_budget_is_never_exceeded) {
    const size_t block = disk_store::header_bytes + 1000;
    {
        auto s = disk_store::open(dir, 3 * block, identity()).value();
        for (uint8_t i = 1; i <= 3; ++i) ASSERT_TRUE(s->write(key(i), blob(1000, i)).ok());
    }
    int refused = 0;
    auto immutable = [&](const fs::path &) {
        ++refused;
        return std::make_error_code(std::errc::operation_not_permitted);
    };
    // Reopened with a smaller budget: nothing can be trimmed, so it stays over budget and says so.
    auto s = disk_store::open(dir, 2 * block, identity(), immutable).value();
    EXPECT_GT(refused, 0);
    EXPECT_EQ(s->count(), 3u) << "blocks that cannot be deleted are still served";
    EXPECT_EQ(s->bytes_used(), 3 * block) << "and still counted";
    auto w = s->write(key(4), blob(1000, 4));
    EXPECT_FALSE(w.ok()) << "a write that needs their space is refused";
    EXPECT_EQ(w.err().code, rc::errc::io);
    EXPECT_FALSE(s->contains(key(4)));
    EXPECT_EQ(s->bytes_used(), 3 * block);
    EXPECT_EQ(s->corrupt_dropped(), 0u);
    size_t on_disk = 0;
    for (const auto & f : fs::directory_iterator(dir))
        if (f.path().extension() == ".kvb") on_disk += fs::file_size(f.path());
    EXPECT_EQ(on_disk, s->bytes_used()) << "the count is what the directory really holds";
    EXPECT_TRUE(s->read(key(1)).ok());
}

TEST_F(disk_store_test, a_corrupt_file_that_cannot_be_deleted_is_never_served_and_still_counted) {
    const size_t block = disk_store::header_bytes + 1000;
    bool can_delete = true;
    auto remove = [&](const fs::path & p) {
        std::error_code ec;
        if (can_delete) fs::remove(p, ec);
        else ec = std::make_error_code(std::errc::read_only_file_system);
        return ec;
    };
    auto s = disk_store::open(dir, 2 * block, identity(), remove).value();
    ASSERT_TRUE(s->write(key(1), blob(1000, 1)).ok());
    {
        std::fstream f(dir / (key(1).hex() + ".kvb"), std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(500);
        f.put('X');
    }
    can_delete = false;
    EXPECT_FALSE(s->read(key(1)).ok());
    EXPECT_FALSE(s->contains(key(1)));
    EXPECT_EQ(s->corrupt_dropped(), 1u);
    EXPECT_EQ(s->bytes_used(), block) << "its bytes are still on disk";
    ASSERT_TRUE(s->write(key(2), blob(1000, 2)).ok());
    EXPECT_FALSE(s->write(key(3), blob(1000, 3)).ok()) << "two blocks' worth are on disk: a third does not fit";
    EXPECT_LE(s->bytes_used(), s->budget());
}

TEST_F(disk_store_test, a_vanished_file_is_missing_not_corrupt) {
    auto s = disk_store::open(dir, 1 << 20, identity()).value();
    ASSERT_TRUE(s->write(key(1), blob(100, 1)).ok());
    ASSERT_TRUE(s->write(key(2), blob(100, 2)).ok());
    fs::remove(dir / (key(1).hex() + ".kvb"));  // an operator cleaned the directory
    auto r = s->read(key(1));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.err().code, rc::errc::not_found);
    EXPECT_EQ(s->corrupt_dropped(), 0u);
    EXPECT_EQ(s->missing_dropped(), 1u);
    EXPECT_FALSE(s->contains(key(1)));
    EXPECT_EQ(s->bytes_used(), disk_store::header_bytes + 100) << "only the block still on disk counts";
    EXPECT_TRUE(s->read(key(2)).ok());
}

TEST_F(disk_store_test, blocks_of_an_older_format_are_dropped_without_counting_them_corrupt) {
    {
        auto s = disk_store::open(dir, 1 << 20, identity()).value();
        ASSERT_TRUE(s->write(key(1), blob(100, 1)).ok());
    }
    const fs::path p = dir / (key(1).hex() + ".kvb");
    {
        std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(8);
        const uint32_t v1 = 1;  // the SHA-256 format
        f.write(reinterpret_cast<const char *>(&v1), sizeof v1);
    }
    auto s = disk_store::open(dir, 1 << 20, identity()).value();
    EXPECT_EQ(s->count(), 0u);
    EXPECT_EQ(s->corrupt_dropped(), 0u);
    EXPECT_FALSE(fs::exists(p));
}

TEST_F(disk_store_test, records_round_trip_and_a_torn_tail_is_ignored) {
    auto s = disk_store::open(dir, 1 << 20, identity()).value();
    ASSERT_TRUE(s->append_record({1, 2, 3}).ok());
    ASSERT_TRUE(s->append_record({4, 5}).ok());
    {
        std::ofstream f(dir / "records.log", std::ios::app | std::ios::binary);
        f << "\x09\x00\x00\x00torn";  // a crash mid-append
    }
    auto r = s->read_records();
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0], (std::vector<uint8_t>{1, 2, 3}));
    EXPECT_EQ(r[1], (std::vector<uint8_t>{4, 5}));
    ASSERT_TRUE(s->rewrite_records({{7}}).ok());
    EXPECT_EQ(s->read_records(), (std::vector<std::vector<uint8_t>>{{7}}));
}

// Issue 26 item 8: a FIFO where a block file should be blocked the I/O thread in open() for ever
// (and every user of the model with it). Anything but a regular file is a corrupt block: counted,
// dropped, never waited on; at open() and at read() alike, and so is a symlink.
TEST_F(disk_store_test, a_fifo_or_symlink_in_place_of_a_block_is_corrupt_and_never_waited_on) {
    auto s = disk_store::open(dir, 1 << 20, identity());
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE(s.value()->write(key(1), blob(1000, 3)).ok());
    ASSERT_TRUE(s.value()->write(key(2), blob(1000, 4)).ok());
    fs::path one, two;
    for (const auto & e : fs::directory_iterator(dir)) {
        if (e.path().extension() != ".kvb") continue;
        (one.empty() ? one : two) = e.path();
    }
    ASSERT_FALSE(two.empty());
    // Swapped behind the store's back after it indexed them.
    fs::remove(one);
    ASSERT_EQ(::mkfifo(one.c_str(), 0644), 0);
    fs::path target = dir / "elsewhere.bin";
    fs::rename(two, target);
    fs::create_symlink(target, two);

    const auto t0 = std::chrono::steady_clock::now();
    for (int k : {1, 2}) {
        auto b = s.value()->read(key(k));
        ASSERT_FALSE(b.ok()) << "block " << k;
    }
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
    EXPECT_EQ(s.value()->corrupt_dropped(), 2u);
    EXPECT_EQ(s.value()->count(), 0u);

    // Planted before a start: dropped when the store opens, without waiting either.
    fs::path planted = one.parent_path() / (one.stem().string() + ".kvb");
    if (!fs::exists(planted)) {
        ASSERT_EQ(::mkfifo(planted.c_str(), 0644), 0);
    }
    auto again = disk_store::open(dir, 1 << 20, identity());
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again.value()->count(), 0u);
    EXPECT_GE(again.value()->corrupt_dropped(), 1u);
}
