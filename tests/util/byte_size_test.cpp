#include "util/byte_size.h"

#include <gtest/gtest.h>

TEST(byte_size, units) {
    EXPECT_EQ(rc::parse_byte_size("1000"), 1000u);
    EXPECT_EQ(rc::parse_byte_size("4GiB"), 4ull << 30);
    EXPECT_EQ(rc::parse_byte_size("512 MiB"), 512ull << 20);
    EXPECT_EQ(rc::parse_byte_size("1.5gb"), 1500000000u);
    EXPECT_EQ(rc::parse_byte_size("2k"), 2048u);
    EXPECT_EQ(rc::parse_byte_size("0"), 0u);
}

TEST(byte_size, rejects_garbage) {
    EXPECT_FALSE(rc::parse_byte_size(""));
    EXPECT_FALSE(rc::parse_byte_size("lots"));
    EXPECT_FALSE(rc::parse_byte_size("-1GiB"));
    EXPECT_FALSE(rc::parse_byte_size("4 parsecs"));
    EXPECT_FALSE(rc::parse_byte_size("1e30"));
}

TEST(byte_size, available_memory_is_known_on_linux) { EXPECT_GT(rc::available_memory_bytes(), 0u); }

TEST(byte_size, formats_in_binary_units) {
    EXPECT_EQ(rc::format_byte_size(87), "87 B");
    EXPECT_EQ(rc::format_byte_size(1536), "1.5 KiB");
    EXPECT_EQ(rc::format_byte_size(512ull << 20), "512.0 MiB");
    EXPECT_EQ(rc::format_byte_size(3ull << 30), "3.0 GiB");
}
