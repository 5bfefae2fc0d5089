#include "progress_bar.h"

#include <sys/ioctl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>

#include "util/byte_size.h"

namespace rc::cli {

namespace {

constexpr auto k_rate_window = std::chrono::seconds(5);
constexpr auto k_redraw_interval = std::chrono::milliseconds(100);

int percent_of(uint64_t done, uint64_t total) {
    if (total == 0) return 0;
    return static_cast<int>(std::min<uint64_t>(100, done * 100 / total));
}

// Columns a UTF-8 string takes (every code point counts one: enough for the bar's block characters).
size_t columns(std::string_view s) {
    return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string bar(int cells, uint64_t done, uint64_t total) {
    const int filled = total == 0 ? 0 : static_cast<int>(std::min<uint64_t>(cells, done * uint64_t(cells) / total));
    std::string out = "▕";
    for (int i = 0; i < cells; ++i) out += i < filled ? "█" : " ";
    return out + "▏";
}

}  // namespace

void rate_meter::add(steady_clock::time_point t, uint64_t done) {
    if (!samples_.empty() && done < samples_.back().second) samples_.clear();  // restarted from zero
    samples_.emplace_back(t, done);
    while (samples_.size() > 2 && t - samples_.front().first > k_rate_window) samples_.pop_front();
}

double rate_meter::bytes_per_second() const {
    if (samples_.size() < 2) return 0;
    const double secs = std::chrono::duration<double>(samples_.back().first - samples_.front().first).count();
    if (secs < 0.2) return 0;
    return double(samples_.back().second - samples_.front().second) / secs;
}

std::string format_eta(double seconds) {
    if (!(seconds >= 0) || std::isinf(seconds) || seconds > 99 * 3600.0) return "--";
    const long s = std::lround(seconds);
    char buf[32];
    if (s < 60) std::snprintf(buf, sizeof buf, "%lds", s);
    else if (s < 3600) std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
    else std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
    return buf;
}

std::string render_progress_line(std::string_view label, uint64_t done, uint64_t total, double rate, int width) {
    char pct[8];
    std::snprintf(pct, sizeof pct, "%3d%%", percent_of(done, total));
    std::string bytes = format_byte_size(done) + "/" + format_byte_size(total);
    std::string tail = "  " + bytes;
    if (rate > 0) {
        tail += "  " + format_byte_size(static_cast<uint64_t>(rate)) + "/s";
        if (done < total) tail += "  " + format_eta(double(total - done) / rate);
    }
    const std::string head = std::string(label) + "  " + pct + " ";
    // The bar takes what is left after the widest tail ("  999.9 MiB/999.9 MiB  999.9 MiB/s  99h59m"),
    // so it keeps its length while the numbers change; up to 25 cells, dropped below 10.
    constexpr long k_widest_tail = 42;
    const long room = long(width) - 1 - long(columns(head)) - k_widest_tail - 2;
    std::string line = head;
    if (room >= 10) line += bar(int(std::min(room, 25L)), done, total);
    line += tail;
    return line;
}

int terminal_width(int fd, int fallback) {
    winsize ws{};
    if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
    return fallback;
}

void progress_display::start_line(std::string_view label) {
    finish();
    label_ = label;
    last_decile_ = -1;
    last_draw_ = {};
    rate_.reset();
}

void progress_display::step(std::string_view label) {
    start_line(label);
    out_ << label_ << "\n" << std::flush;
}

void progress_display::transfer(std::string_view label, uint64_t done, uint64_t total) {
    if (label != label_) start_line(label);
    const auto now = steady_clock::now();
    rate_.add(now, done);
    if (terminal_) {
        // At most ~10 redraws a second, but always the last one, so 100% is what stays on screen.
        if (line_open_ && done < total && now - last_draw_ < k_redraw_interval) return;
        last_draw_ = now;
        draw(done, total);
        return;
    }
    const int decile = percent_of(done, total) / 10;
    if (decile == last_decile_) return;
    last_decile_ = decile;
    draw(done, total);
}

void progress_display::note(std::string_view text) {
    finish();
    out_ << text << "\n" << std::flush;
    last_decile_ = -1;  // plain output: say where the transfer stands again when it goes on
    last_draw_ = {};
    rate_.reset();      // the wait is not a slow transfer
}

void progress_display::draw(uint64_t done, uint64_t total) {
    if (terminal_) {
        // "\x1b[K" clears what a longer previous line left behind.
        out_ << "\r" << render_progress_line(label_, done, total, rate_.bytes_per_second(), width_) << "\x1b[K" << std::flush;
        line_open_ = true;
        return;
    }
    out_ << label_ << ": " << percent_of(done, total) << "% (" << format_byte_size(done) << " of " << format_byte_size(total) << ")\n"
         << std::flush;
}

void progress_display::finish() {
    if (line_open_) out_ << "\n" << std::flush;
    line_open_ = false;
}

}  // namespace rc::cli
