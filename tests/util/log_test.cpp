#include "util/log.h"

#include <gtest/gtest.h>

TEST(log, key_value_line_with_quoting) {
    std::string line = rc::log::format_line(rc::log::level::warn, "engine", "decode_failed",
                                            {{"ret", -3}, {"model", "demo"}, {"msg", "has spaces \"q\""}, {"ok", true}});
    EXPECT_NE(line.find(" WARN engine event=decode_failed ret=-3 model=demo msg=\"has spaces \\\"q\\\"\" ok=true"), std::string::npos) << line;
    EXPECT_EQ(line.find('\n'), std::string::npos);
}

TEST(log, newlines_in_values_stay_on_one_line) {
    std::string line = rc::log::format_line(rc::log::level::info, "x", "e", {{"v", "a\nb"}});
    EXPECT_EQ(line.find('\n'), std::string::npos);
    EXPECT_NE(line.find("v=\"a\\nb\""), std::string::npos);
}

TEST(log, parse_level) {
    rc::log::level l;
    EXPECT_TRUE(rc::log::parse_level("debug", l));
    EXPECT_EQ(l, rc::log::level::debug);
    EXPECT_FALSE(rc::log::parse_level("loud", l));
}
