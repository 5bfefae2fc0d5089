#include "llama/template_budget.h"

#include "llama/render_threads.h"

#include <jinja/budget.h>
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <exception>
#include <mutex>
#include <regex>

namespace rc::llama {

namespace {

std::mutex g_limits_mu;
template_limits g_limits;

}  // namespace

template_limits current_template_limits() {
    std::lock_guard<std::mutex> lock(g_limits_mu);
    return g_limits;
}

void set_template_limits(const template_limits & limits) {
    std::lock_guard<std::mutex> lock(g_limits_mu);
    g_limits = limits;
}

status check_template_size(const std::string & source) {
    const size_t cap = current_template_limits().max_template_bytes;
    if (source.size() > cap)
        return make_error(errc::invalid_argument, "exceeded its budget: template is " + std::to_string(source.size()) +
                                                      " bytes, more than " + std::to_string(cap));
    // tojson's indentation is one native call the render budget cannot interrupt: a literal indent
    // must be a small integer (the fuzzer found `tojson(indent=3119f4505)` rendering for 13 s).
    static const std::regex indent(R"(tojson\s*\(\s*(?:indent\s*=\s*)?([0-9][^,)\s]*))");
    for (std::sregex_iterator it(source.begin(), source.end(), indent), end; it != end; ++it) {
        const std::string arg = (*it)[1].str();
        const bool small = arg.size() <= 2 && std::all_of(arg.begin(), arg.end(), [](unsigned char c) { return std::isdigit(c); });
        if (!small) return make_error(errc::invalid_argument, "exceeded its budget: tojson indent '" + arg.substr(0, 20) + "' is not an integer up to 99");
    }
    return {};
}

status run_template(const std::string & what, const std::function<void()> & fn, const std::function<bool()> & cancelled) {
    const template_limits lim = current_template_limits();
    jinja::render_budget budget;
    budget.max_depth = lim.max_depth;
    budget.max_steps = lim.max_steps;
    budget.max_values = lim.max_values;
    budget.max_string_bytes = lim.max_string_bytes;
    budget.max_total_bytes = lim.max_total_bytes;
    budget.deadline = std::chrono::steady_clock::now() + lim.max_time;
    budget.cancelled = cancelled;

    std::string tripped;
    const std::function<void()> budgeted = [&] {
        jinja::set_render_budget(&budget);
        struct clear {
            std::string & out;
            ~clear() {
                if (const char * t = jinja::budget_tripped()) out = t;
                jinja::set_render_budget(nullptr);
            }
        } on_exit{tripped};
        fn();
    };
    std::exception_ptr failure;
    const std::function<void()> guarded = [&] {
        try {
            budgeted();
        } catch (...) {
            failure = std::current_exception();
        }
    };
    if (!run_on_render_thread(guarded)) return make_error(errc::unavailable, what + ": no thread could be started for the render");

    // A budget error wins even when a caller inside llama.cpp caught it and failed differently.
    if (!tripped.empty()) {
        // What the render built up to its limit (up to the string and value bounds) was freed in
        // its thread's malloc arena, which keeps it: hand it back, so a hostile template leaves the
        // process the size it was.
        ::malloc_trim(0);
        if (cancelled && cancelled()) return make_error(errc::invalid_argument, what + " was cancelled (the client left)");
        return make_error(errc::invalid_argument, what + " exceeded its budget: " + tripped);
    }
    if (failure) {
        try {
            std::rethrow_exception(failure);
        } catch (const std::exception & e) {
            return make_error(errc::invalid_argument, what + ": " + e.what());
        } catch (...) {
            return make_error(errc::invalid_argument, what + ": unknown error");
        }
    }
    return {};
}

}  // namespace rc::llama
