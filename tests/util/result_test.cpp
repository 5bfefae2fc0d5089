#include "util/result.h"

#include <gtest/gtest.h>

TEST(result, value_and_error) {
    rc::result<int> ok = 7;
    ASSERT_TRUE(ok.ok());
    EXPECT_EQ(ok.value(), 7);
    rc::result<int> bad = rc::make_error(rc::errc::not_found, "nope");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.err().code, rc::errc::not_found);
    EXPECT_EQ(bad.err().message, "nope");
}

TEST(result, errc_names_round_trip) {
    for (auto c : {rc::errc::invalid_argument, rc::errc::not_found, rc::errc::unavailable, rc::errc::context_overflow,
                   rc::errc::unauthenticated, rc::errc::permission_denied, rc::errc::data_loss, rc::errc::io, rc::errc::internal}) {
        EXPECT_EQ(rc::errc_from_name(rc::errc_name(c)), c);
    }
    EXPECT_EQ(rc::errc_from_name("bogus"), rc::errc::internal);
}
