#pragma once
// result<T>: a value or an error, for failures that cross a module boundary (ARCHITECTURE.md §6).
// Expected scarcity and bad input are values, not exceptions.
#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace rc {

enum class errc {
    invalid_argument,   // bad input from a caller or client (HTTP 400)
    not_found,          // unknown model, file, route (404)
    unavailable,        // temporarily out of capacity: queue full, shutting down (503)
    context_overflow,   // a request does not fit the model's context (400)
    unauthenticated,    // credentials missing or refused, e.g. by the Hugging Face Hub (401)
    permission_denied,  // credentials valid but not enough, e.g. a gated repository (403)
    data_loss,          // data arrived or was stored corrupt (checksum / size mismatch)
    io,                 // filesystem / network failure
    internal,           // a bug or an unexpected failure inside llama.cpp (500)
};

const char * errc_name(errc code);
errc errc_from_name(std::string_view name);  // unknown names map to internal

struct error {
    errc code = errc::internal;
    std::string message;
};

template <typename T>
class result {
  public:
    result(T value) : v_(std::move(value)) {}
    result(error err) : v_(std::move(err)) {}

    bool ok() const { return v_.index() == 0; }
    explicit operator bool() const { return ok(); }

    T & value() & { assert(ok() && "value() on an error result"); return std::get<0>(v_); }
    T && value() && { assert(ok() && "value() on an error result"); return std::get<0>(std::move(v_)); }
    const T & value() const & { assert(ok() && "value() on an error result"); return std::get<0>(v_); }
    T * operator->() { return &value(); }
    const T * operator->() const { return &value(); }
    T & operator*() { return value(); }

    const error & err() const { assert(!ok() && "err() on a value result"); return std::get<1>(v_); }

  private:
    std::variant<T, error> v_;
};

// status: a result without a value.
class status {
  public:
    status() = default;
    status(error err) : err_(std::move(err)), ok_(false) {}
    bool ok() const { return ok_; }
    explicit operator bool() const { return ok_; }
    const error & err() const { assert(!ok_); return err_; }

  private:
    error err_;
    bool ok_ = true;
};

inline error make_error(errc code, std::string message) { return error{code, std::move(message)}; }

}  // namespace rc
