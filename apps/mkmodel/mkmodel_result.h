// A minimal result type for the generator: a value or an error message. The tool is a standalone
// dev binary, so it does not depend on rc_util; failures travel up as values and main() prints them.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace rc::mkmodel {

struct error {
    std::string message;
};

template <class T>
class result {
public:
    result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor): return-by-value reads naturally
    result(error err) : v_(std::move(err)) {}  // NOLINT(google-explicit-constructor)

    bool ok() const { return std::holds_alternative<T>(v_); }
    T & value() { return std::get<T>(v_); }
    const T & value() const { return std::get<T>(v_); }
    const std::string & message() const { return std::get<error>(v_).message; }

private:
    std::variant<T, error> v_;
};

// Success without a value.
struct done {};
using status = result<done>;

}  // namespace rc::mkmodel
