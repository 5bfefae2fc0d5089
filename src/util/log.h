#pragma once
// One line per event, key=value fields (ARCHITECTURE.md §6):
//   2026-11-29T09:00:00.123Z INFO engine event=loaded model=demo n_ctx=4096
// Thread-safe; writes to stderr. Values with spaces or quotes are quoted.
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace rc::log {

enum class level { debug = 0, info = 1, warn = 2, error = 3 };

void set_level(level lvl);
level current_level();
bool parse_level(std::string_view name, level & out);

struct field {
    std::string_view key;
    std::string value;
    field(std::string_view k, std::string_view v) : key(k), value(v) {}
    field(std::string_view k, const char * v) : key(k), value(v ? v : "") {}
    field(std::string_view k, const std::string & v) : key(k), value(v) {}
    template <typename N, typename = std::enable_if_t<std::is_arithmetic_v<N>>>
    field(std::string_view k, N v) : key(k), value(number(v)) {}

  private:
    template <typename N>
    static std::string number(N v) {
        if constexpr (std::is_same_v<N, bool>) return v ? "true" : "false";
        else return std::to_string(v);
    }
};

void write(level lvl, std::string_view component, std::string_view event, std::initializer_list<field> fields = {});

inline void debug(std::string_view c, std::string_view e, std::initializer_list<field> f = {}) { write(level::debug, c, e, f); }
inline void info(std::string_view c, std::string_view e, std::initializer_list<field> f = {}) { write(level::info, c, e, f); }
inline void warn(std::string_view c, std::string_view e, std::initializer_list<field> f = {}) { write(level::warn, c, e, f); }
inline void error(std::string_view c, std::string_view e, std::initializer_list<field> f = {}) { write(level::error, c, e, f); }

// Formats one line without writing it (for tests and for the llama.cpp log bridge).
std::string format_line(level lvl, std::string_view component, std::string_view event, std::initializer_list<field> fields);

}  // namespace rc::log
