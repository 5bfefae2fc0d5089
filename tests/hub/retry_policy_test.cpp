// retry_policy: backoff with jitter, Retry-After in its three date forms and as seconds, which
// statuses are retried, how waits print. Pure functions: no server, no clock.
#include "hub/retry_policy.h"

#include <gtest/gtest.h>

using namespace rc::hub;
using std::chrono::milliseconds;
using sys = std::chrono::system_clock;

namespace {

// 1994-11-06 08:49:37 UTC, the RFC's example date.
const sys::time_point rfc_example{std::chrono::seconds(784111777)};

}  // namespace

TEST(retry_policy, backoff_doubles_up_to_the_cap_with_equal_jitter) {
    retry_settings s;  // 1 s base, 30 s cap
    EXPECT_EQ(backoff_delay(s, 1, 0.0), milliseconds(500));
    EXPECT_EQ(backoff_delay(s, 1, 0.999999), milliseconds(999));
    EXPECT_EQ(backoff_delay(s, 2, 0.0), milliseconds(1000));
    EXPECT_EQ(backoff_delay(s, 3, 0.5), milliseconds(3000));  // 4 s: 2 s + half of 2 s
    EXPECT_EQ(backoff_delay(s, 6, 0.0), milliseconds(15000));  // 32 s capped to 30 s
    EXPECT_EQ(backoff_delay(s, 60, 1.0), milliseconds(30000));  // no overflow far out
    for (int failures = 1; failures <= 10; ++failures)
        EXPECT_LE(backoff_delay(s, failures, 0.3), backoff_delay(s, failures + 1, 0.3)) << failures;
}

TEST(retry_policy, a_base_above_the_cap_wins_and_zero_means_at_once) {
    retry_settings s;
    s.base_delay = milliseconds(45000);
    EXPECT_EQ(backoff_delay(s, 4, 1.0), milliseconds(45000));
    s.base_delay = milliseconds(0);
    EXPECT_EQ(backoff_delay(s, 5, 0.7), milliseconds(0));
}

TEST(retry_policy, retry_after_in_seconds) {
    EXPECT_EQ(parse_retry_after("1", rfc_example), milliseconds(1000));
    EXPECT_EQ(parse_retry_after(" 120 ", rfc_example), milliseconds(120000));
    EXPECT_EQ(parse_retry_after("0", rfc_example), milliseconds(0));
    EXPECT_GE(*parse_retry_after("99999999999999999999", rfc_example), milliseconds(3600000)) << "huge: longer than any cap";
}

TEST(retry_policy, retry_after_as_an_http_date_in_all_three_forms) {
    const auto before = rfc_example - std::chrono::seconds(90);
    EXPECT_EQ(parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", before), milliseconds(90000));   // IMF-fixdate
    EXPECT_EQ(parse_retry_after("Sunday, 06-Nov-94 08:49:37 GMT", before), milliseconds(90000));  // RFC 850
    EXPECT_EQ(parse_retry_after("Sun Nov  6 08:49:37 1994", before), milliseconds(90000));        // asctime
    EXPECT_EQ(parse_retry_after("Thu, 01 Jan 2037 00:00:00 GMT", sys::time_point(std::chrono::seconds(2114380800 - 5))), milliseconds(5000));
    // A date already past means "now".
    EXPECT_EQ(parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", rfc_example + std::chrono::hours(1)), milliseconds(0));
}

TEST(retry_policy, retry_after_that_is_neither_is_ignored) {
    for (const char * bad : {"", "soon", "-5", "1.5", "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 32 Nov 1994 08:49:37 GMT",
                             "Sun, 06 Nov 1994 25:49:37 GMT", "Sun, 06 Nov 1994", "06 Nov 1994 08:49:37 07 GMT"})
        EXPECT_FALSE(parse_retry_after(bad, rfc_example).has_value()) << bad;
}

TEST(retry_policy, only_429_and_5xx_are_retried) {
    for (long s : {429L, 500L, 502L, 503L, 504L, 599L}) EXPECT_TRUE(is_retryable_status(s)) << s;
    for (long s : {200L, 206L, 301L, 400L, 401L, 403L, 404L, 408L, 416L, 428L, 430L, 600L}) EXPECT_FALSE(is_retryable_status(s)) << s;
}

TEST(retry_policy, waits_print_short) {
    EXPECT_EQ(format_wait(milliseconds(0)), "0ms");
    EXPECT_EQ(format_wait(milliseconds(250)), "250ms");
    EXPECT_EQ(format_wait(milliseconds(1400)), "1.4s");
    EXPECT_EQ(format_wait(milliseconds(30000)), "30.0s");
    EXPECT_EQ(format_wait(milliseconds(65000)), "1m05s");
}
