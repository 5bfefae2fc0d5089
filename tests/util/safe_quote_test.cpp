#include "util/safe_quote.h"

#include <gtest/gtest.h>

TEST(safe_quote, keeps_printable_text_and_escapes_the_rest) {
    EXPECT_EQ(rc::safe_quote("demo:latest"), "'demo:latest'");
    EXPECT_EQ(rc::safe_quote(std::string("a\0b", 3)), "'a\\x00b'") << "a NUL must not cut the message";
    EXPECT_EQ(rc::safe_quote("tab\there\n"), "'tab\\x09here\\x0a'");
    EXPECT_EQ(rc::safe_quote("back\\slash"), "'back\\x5cslash'") << "escapes stay unambiguous";
    EXPECT_EQ(rc::safe_quote("\xC3\xA9"), "'\\xc3\\xa9'");
}

TEST(safe_quote, bounds_what_it_echoes) {
    std::string huge(1 << 20, 'x');
    std::string q = rc::safe_quote(huge);
    EXPECT_EQ(q.size(), 64u + 5u) << "64 bytes, two quotes and ...";
    EXPECT_EQ(q.substr(q.size() - 4), "...'");
    EXPECT_EQ(rc::safe_quote("abcdef", 3), "'abc...'");
}
