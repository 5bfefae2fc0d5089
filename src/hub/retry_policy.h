#pragma once
// When a download tries again, and how long it waits first: exponential backoff with jitter, the
// server's Retry-After (seconds or an HTTP-date) honoured up to a cap, a bounded number of attempts.
// Pure: no clock is read here that the caller does not pass in, no randomness it does not supply.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace rc::hub {

using std::chrono::milliseconds;

struct retry_settings {
    // Attempts of one file download in a row that bring no new byte before it gives up (the first
    // included; 1: never retry). An attempt that brings new bytes starts the count again, so a long
    // download over a link that drops now and then still finishes.
    int max_attempts = 8;
    milliseconds base_delay{1000};   // the wait before the second attempt; doubled for each further one
    milliseconds max_delay{30000};   // the backoff never waits longer than this (or base_delay, if larger)
    milliseconds retry_after_cap{60000};  // a server's Retry-After longer than this is cut to it
};

// The wait before attempt `failures + 1`, after `failures` (≥ 1) failed attempts in a row:
// d = min(max(max_delay, base_delay), base_delay · 2^(failures-1)), then "equal jitter": d/2 + unit_random · d/2, so
// clients that failed together do not all come back at once, and none comes back at once.
// `unit_random` is in [0, 1).
milliseconds backoff_delay(const retry_settings & s, int failures, double unit_random);

// A Retry-After header value as a wait from `now`: delta-seconds ("120") or an HTTP-date in any of
// the three forms RFC 9110 names (IMF-fixdate, RFC 850, asctime). A date in the past is a zero wait.
// nullopt for anything else (then the caller uses its own backoff).
std::optional<milliseconds> parse_retry_after(std::string_view value, std::chrono::system_clock::time_point now);

// HTTP statuses worth another attempt: 429 and 5xx. Every other 4xx is the server's final word.
bool is_retryable_status(long status);

// "1.4s", "250ms", "1m05s": a wait as the progress output shows it.
std::string format_wait(milliseconds d);

}  // namespace rc::hub
