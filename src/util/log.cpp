#include "util/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace rc::log {

namespace {
std::atomic<int> g_level{static_cast<int>(level::info)};
std::mutex g_write_mutex;

const char * level_name(level lvl) {
    switch (lvl) {
        case level::debug: return "DEBUG";
        case level::info: return "INFO";
        case level::warn: return "WARN";
        case level::error: return "ERROR";
    }
    return "INFO";
}

bool needs_quotes(std::string_view v) {
    if (v.empty()) return true;
    for (char c : v) {
        if (c == ' ' || c == '"' || c == '=' || c == '\n' || c == '\t') return true;
    }
    return false;
}

void append_value(std::string & out, std::string_view v) {
    if (!needs_quotes(v)) {
        out += v;
        return;
    }
    out += '"';
    for (char c : v) {
        if (c == '"' || c == '\\') out += '\\';
        if (c == '\n') { out += "\\n"; continue; }
        out += c;
    }
    out += '"';
}

std::string timestamp() {
    using namespace std::chrono;
    auto now = system_clock::now();
    auto secs = system_clock::to_time_t(now);
    auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
    return buf;
}
}  // namespace

void set_level(level lvl) { g_level.store(static_cast<int>(lvl)); }
level current_level() { return static_cast<level>(g_level.load()); }

bool parse_level(std::string_view name, level & out) {
    if (name == "debug") out = level::debug;
    else if (name == "info") out = level::info;
    else if (name == "warn") out = level::warn;
    else if (name == "error") out = level::error;
    else return false;
    return true;
}

std::string format_line(level lvl, std::string_view component, std::string_view event,
                        std::initializer_list<field> fields) {
    std::string line = timestamp();
    line += ' ';
    line += level_name(lvl);
    line += ' ';
    line += component;
    line += " event=";
    append_value(line, event);
    for (const auto & f : fields) {
        line += ' ';
        line += f.key;
        line += '=';
        append_value(line, f.value);
    }
    return line;
}

void write(level lvl, std::string_view component, std::string_view event, std::initializer_list<field> fields) {
    if (static_cast<int>(lvl) < g_level.load()) return;
    std::string line = format_line(lvl, component, event, fields);
    line += '\n';
    std::lock_guard lock(g_write_mutex);
    std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace rc::log
