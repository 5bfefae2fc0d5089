#pragma once
// Every parse and render of a chat template runs through here. A template is data from a model file
// or a client (`/api/create`), and llama.cpp's jinja engine has no limits of its own, so each call
// runs under a budget (scripts/llama-patches/jinja-budgets.patch and jinja-total-bytes.patch:
// nesting, evaluation steps, values, string size, the bytes built in all, time, cancellation) on a
// thread with a stack large enough for whatever nesting the budget lets through. Exceeding a limit
// is an error naming it, never a crash or an unbounded stall.
#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

#include "util/result.h"

namespace rc::llama {

struct template_limits {
    size_t max_template_bytes = size_t{256} << 10;  // the template's own text (real ones: under 20 KiB)
    size_t max_depth = 1000;                        // nested evaluations (a macro calling itself stops here)
    size_t max_steps = 4'000'000;                   // evaluations in one parse-and-render
    size_t max_values = 2'000'000;                  // values created (memory: about 200 bytes each)
    size_t max_string_bytes = size_t{64} << 20;     // any one string's memory, the prompt included (2x the body limit)
    // Everything one call builds, together: every string and list slot counted as it is made, before
    // its memory is taken (a list doubled 40 times, twenty 60 MB strings). A render copies its prompt
    // a few times over (the message, the concatenations, each block's output): a 32 MB body's
    // renders, init and apply alike, stay well inside this.
    size_t max_total_bytes = size_t{512} << 20;
    std::chrono::milliseconds max_time{10000};      // wall time of one call (--template-timeout)
};

// The limits every call uses; set once at start-up, before models load.
template_limits current_template_limits();
void set_template_limits(const template_limits & limits);

// Runs `fn`, which calls into llama.cpp's chat templates (init, apply), under the current limits on
// a thread with a 256 MiB stack (address space: only what is touched is memory). `cancelled` is
// polled during the render (a departed client). Errors, each starting with `what` ("chat
// template"): invalid_argument "… exceeded its budget: template nesting is deeper than 1000
// levels …" naming the limit, or "… was cancelled"; an exception `fn` throws becomes
// invalid_argument "…: <its message>".
status run_template(const std::string & what, const std::function<void()> & fn, const std::function<bool()> & cancelled = {});

// The template text's own size (a GGUF's or a client's), before anything parses it: invalid_argument
// "exceeded its budget: template is N bytes, more than M" (to follow "chat template of …").
status check_template_size(const std::string & source);

}  // namespace rc::llama
