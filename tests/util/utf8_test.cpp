#include "util/utf8.h"

#include <gtest/gtest.h>

using namespace rc::utf8;

TEST(utf8, complete_prefix_keeps_whole_code_points) {
    EXPECT_EQ(complete_prefix_length("abc"), 3u);
    std::string euro = "\xE2\x82\xAC";  // €
    EXPECT_EQ(complete_prefix_length(euro), 3u);
    EXPECT_EQ(complete_prefix_length("a" + euro.substr(0, 2)), 1u);
    EXPECT_EQ(complete_prefix_length("a" + euro.substr(0, 1)), 1u);
    std::string emoji = "\xF0\x9F\x98\x80";
    EXPECT_EQ(complete_prefix_length("x" + emoji.substr(0, 3)), 1u);
    EXPECT_EQ(complete_prefix_length("x" + emoji), 5u);
}

TEST(utf8, invalid_bytes_never_block_the_stream) {
    EXPECT_EQ(complete_prefix_length("a\xFF"), 2u);
    EXPECT_EQ(complete_prefix_length(std::string("\x80\x80\x80\x80\x80", 5)), 5u);
}

TEST(utf8, validation) {
    EXPECT_TRUE(is_valid("hello \xE2\x82\xAC \xF0\x9F\x98\x80"));
    EXPECT_FALSE(is_valid("\xC0\xAF"));          // overlong '/'
    EXPECT_FALSE(is_valid("\xED\xA0\x80"));      // surrogate
    EXPECT_FALSE(is_valid("\xF4\x90\x80\x80"));  // > U+10FFFF
    EXPECT_FALSE(is_valid("\xE2\x82"));          // truncated
    EXPECT_FALSE(is_valid("\xFF"));
}
