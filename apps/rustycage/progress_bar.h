#pragma once
// Download progress for a terminal or a log. On a terminal: one line per step, the current one
// redrawn in place with '\r' (at most ~10 times a second) as
//   pulling 1a2b3c4d5e6f  45% ▕██████████          ▏ 21.6 MiB/48.0 MiB  12.3 MiB/s  2s
// Elsewhere (a pipe, a file, CI): one plain line per step, plus one every 10% of a transfer.
// Notes (retries) get a line of their own either way.
// Single-threaded: call from the thread doing the work.
#include <chrono>
#include <cstdint>
#include <deque>
#include <iosfwd>
#include <string>
#include <string_view>
#include <utility>

namespace rc::cli {

using steady_clock = std::chrono::steady_clock;

// Transfer speed over the last few seconds, so a stall shows as a falling rate.
class rate_meter {
  public:
    void add(steady_clock::time_point t, uint64_t done);
    double bytes_per_second() const;  // 0 until two samples a little apart
    void reset() { samples_.clear(); }

  private:
    std::deque<std::pair<steady_clock::time_point, uint64_t>> samples_;
};

// "4s", "1m05s", "2h03m"; "--" for an unknown duration (negative, infinite or over 99 hours).
std::string format_eta(double seconds);

// The terminal line for one transfer, fitted to `width` columns: the bar shrinks (and goes) first.
// `rate` in bytes/s, 0 when unknown (then speed and ETA are left out).
std::string render_progress_line(std::string_view label, uint64_t done, uint64_t total, double rate, int width);

// Columns of the terminal behind `fd`, or `fallback` when it has none.
int terminal_width(int fd, int fallback = 80);

class progress_display {
  public:
    progress_display(std::ostream & out, bool terminal, int width = 80) : out_(out), terminal_(terminal), width_(width) {}
    ~progress_display() { finish(); }
    progress_display(const progress_display &) = delete;
    progress_display & operator=(const progress_display &) = delete;

    // A step without a byte count ("pulling manifest", "verifying sha256 digest").
    void step(std::string_view label);
    // A transfer's progress; a new label starts a new line.
    void transfer(std::string_view label, uint64_t done, uint64_t total);
    // A line of its own in the middle of a transfer ("retrying (2/8) in 1.4s: connection reset"):
    // the line being redrawn ends, `text` follows, and the transfer's next progress starts a fresh line.
    void note(std::string_view text);
    // Ends the line being redrawn (before other output, and at the end).
    void finish();

  private:
    void start_line(std::string_view label);
    void draw(uint64_t done, uint64_t total);

    std::ostream & out_;
    bool terminal_;
    int width_;
    std::string label_;
    bool line_open_ = false;  // terminal: the cursor is on a line being redrawn
    steady_clock::time_point last_draw_{};
    int last_decile_ = -1;    // plain: the last 10% step printed
    rate_meter rate_;
};

}  // namespace rc::cli
