#pragma once
// The threads chat templates render on (template_budget.h): each has a 256 MiB stack, enough for the
// nesting a template's budget lets through. Starting such a thread costs about 0.1 ms (an mmap,
// a clone and an munmap: glibc caches no stack that large), paid on every render of every request
// — on the fleet gateway, a tenth of its routing time. So up to `kept` threads are kept and reused;
// more renders at once each get a fresh thread, as before, which ends with its job.
//
// A kept thread hands back, after each job, every stack page below its own frame (madvise
// MADV_DONTNEED on its own mapping): a template that recursed deep leaves no resident stack behind.
// Thread-safe. Kept threads live as long as the process.
#include <cstddef>
#include <functional>

namespace rc::llama {

// Runs `fn` on a render thread and waits for it. `fn` must not throw (wrap it). False when no
// thread could be had (no kept one idle, and none could be started).
bool run_on_render_thread(const std::function<void()> & fn);

// Bookkeeping, for tests and /metrics: threads kept now, and renders run on a fresh thread.
struct render_thread_stats {
    size_t kept = 0;
    size_t fresh_runs = 0;
};
render_thread_stats current_render_thread_stats();

constexpr size_t k_render_stack_bytes = size_t{256} << 20;
constexpr size_t k_kept_render_threads = 4;

}  // namespace rc::llama
