#include "cli_common.h"

#include <malloc.h>

#include <pthread.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <iostream>

#include "commands.h"

namespace rc::cli {

void add_store_flags(CLI::App & cmd, store_flags & f) {
    f.models_dir = default_models_dir();
    cmd.add_option("--models-dir", f.models_dir, "The models directory (model store and loose *.gguf files)")
        ->envname("RUSTYCAGE_MODELS_DIR")->capture_default_str();
    cmd.add_option("--log-level", f.log_level, "debug, info, warn or error")->envname("RUSTYCAGE_LOG_LEVEL")->capture_default_str();
}

int fail(std::string_view message) {
    std::cerr << "error: " << message << "\n";
    return 1;
}

int fail(const error & e) { return fail(e.message); }

void text_table::print(std::ostream & out) const {
    std::vector<size_t> width;
    for (const auto & row : rows_) {
        if (width.size() < row.size()) width.resize(row.size(), 0);
        for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
    }
    for (const auto & row : rows_) {
        std::string line;
        for (size_t i = 0; i < row.size(); ++i) {
            line += row[i];
            if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 3, ' ');
        }
        out << line << "\n";
    }
}

std::string relative_time(sys_clock::time_point t, sys_clock::time_point now) {
    using namespace std::chrono;
    const bool future = t > now;
    // Far-future times overflow a plain subtraction; compare before subtracting.
    if (future && t - now > hours(24 * 365 * 100)) return "Forever";
    const auto secs = duration_cast<seconds>(future ? t - now : now - t).count();
    const char * suffix = future ? " from now" : " ago";
    auto plural = [&](long long n, const char * unit) {
        return std::to_string(n) + " " + unit + (n == 1 ? "" : "s") + suffix;
    };
    if (secs < 1) return future ? "Now" : "Just now";
    if (secs < 60) return plural(secs, "second");
    if (secs < 120) return std::string("About a minute") + suffix;
    if (secs < 3600) return plural(secs / 60, "minute");
    if (secs < 7200) return std::string("About an hour") + suffix;
    if (secs < 86400) return plural(secs / 3600, "hour");
    if (secs < 7 * 86400) return plural(secs / 86400, "day");
    if (secs < 30 * 86400) return plural(secs / (7 * 86400), "week");
    if (secs < 365 * 86400) return plural(secs / (30 * 86400), "month");
    return plural(secs / (365 * 86400), "year");
}

std::string shorten(std::string_view text, size_t max) {
    std::string s(text);
    std::replace(s.begin(), s.end(), '\n', ' ');
    if (s.size() <= max) return s;
    return s.substr(0, max > 3 ? max - 3 : 0) + "...";
}

std::string short_id(std::string_view digest) {
    if (auto sep = digest.find_first_of(":-"); sep != std::string_view::npos) digest.remove_prefix(sep + 1);
    return std::string(digest.substr(0, 12));
}

std::string format_parameter_count(uint64_t n) {
    static const struct {
        double scale;
        const char * suffix;
    } units[] = {{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}};
    for (const auto & u : units) {
        if (double(n) >= u.scale) {
            char buf[32];
            std::snprintf(buf, sizeof buf, "%.1f%s", double(n) / u.scale, u.suffix);
            return buf;
        }
    }
    return std::to_string(n);
}

sigset_t block_stop_signals() {
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    std::signal(SIGPIPE, SIG_IGN);
    return signals;
}

void return_large_allocations() {
    ::mallopt(M_MMAP_THRESHOLD, 1 << 20);  // fixed: no dynamic raise
    ::mallopt(M_TRIM_THRESHOLD, 4 << 20);
}

}  // namespace rc::cli
