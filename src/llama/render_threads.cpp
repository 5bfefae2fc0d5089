#include "llama/render_threads.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

namespace rc::llama {

namespace {

// One kept thread: its own stack mapping (so it can hand pages back) and a one-job mailbox.
struct kept_thread {
    std::mutex mu;
    std::condition_variable cv;
    const std::function<void()> * job = nullptr;  // set by the caller, cleared when done
    char * stack = nullptr;                       // the mapping; its lowest page is the guard
};

std::mutex g_mu;
std::vector<kept_thread *> g_idle;  // kept threads waiting for a job
size_t g_kept = 0;
size_t g_fresh_runs = 0;

size_t page_size() {
    static const size_t p = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    return p;
}

// Every page of the stack below the calling frame, less a margin for the calls madvise makes.
void release_stack_below_here(char * stack) {
    volatile char here = 0;
    const auto sp = reinterpret_cast<uintptr_t>(&here);
    const uintptr_t margin = 64 * 1024;
    const uintptr_t low = reinterpret_cast<uintptr_t>(stack) + page_size();  // above the guard
    if (sp < low + margin) return;
    const uintptr_t high = (sp - margin) & ~(static_cast<uintptr_t>(page_size()) - 1);
    if (high > low) ::madvise(reinterpret_cast<void *>(low), high - low, MADV_DONTNEED);
}

void * kept_main(void * arg) {
    auto * t = static_cast<kept_thread *>(arg);
    for (;;) {
        const std::function<void()> * job;
        {
            std::unique_lock<std::mutex> lock(t->mu);
            t->cv.wait(lock, [&] { return t->job != nullptr; });
            job = t->job;
        }
        (*job)();
        release_stack_below_here(t->stack);
        {
            std::lock_guard<std::mutex> lock(t->mu);
            t->job = nullptr;
        }
        t->cv.notify_all();
    }
    return nullptr;
}

// A new kept thread on a stack we map ourselves; null when it cannot be made.
kept_thread * start_kept() {
    void * stack = ::mmap(nullptr, k_render_stack_bytes, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED) return nullptr;
    ::mprotect(stack, page_size(), PROT_NONE);  // the guard: an overflow faults instead of writing below
    auto * t = new kept_thread;
    t->stack = static_cast<char *>(stack);
    pthread_attr_t attr;
    bool ok = pthread_attr_init(&attr) == 0;
    if (ok) {
        ok = pthread_attr_setstack(&attr, stack, k_render_stack_bytes) == 0;
        pthread_t thread;
        ok = ok && pthread_create(&thread, &attr, kept_main, t) == 0;
        if (ok) pthread_detach(thread);
        pthread_attr_destroy(&attr);
    }
    if (!ok) {
        ::munmap(stack, k_render_stack_bytes);
        delete t;
        return nullptr;
    }
    return t;
}

void * fresh_main(void * arg) {
    (*static_cast<const std::function<void()> *>(arg))();
    return nullptr;
}

bool run_on_fresh_thread(const std::function<void()> & fn) {
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0) return false;
    pthread_attr_setstacksize(&attr, k_render_stack_bytes);
    pthread_t t;
    const int rc = pthread_create(&t, &attr, fresh_main, const_cast<std::function<void()> *>(&fn));
    pthread_attr_destroy(&attr);
    if (rc != 0) return false;
    pthread_join(t, nullptr);
    return true;
}

}  // namespace

bool run_on_render_thread(const std::function<void()> & fn) {
    kept_thread * t = nullptr;
    bool start = false;
    {
        std::lock_guard<std::mutex> lock(g_mu);
        if (!g_idle.empty()) {
            t = g_idle.back();
            g_idle.pop_back();
        } else if (g_kept < k_kept_render_threads) {
            ++g_kept;  // reserved now, so concurrent callers do not start more than `kept`
            start = true;
        }
    }
    if (start && !(t = start_kept())) {
        std::lock_guard<std::mutex> lock(g_mu);
        --g_kept;
    }
    if (!t) {
        {
            std::lock_guard<std::mutex> lock(g_mu);
            ++g_fresh_runs;
        }
        return run_on_fresh_thread(fn);
    }
    {
        std::lock_guard<std::mutex> lock(t->mu);
        t->job = &fn;
    }
    t->cv.notify_all();
    {
        std::unique_lock<std::mutex> lock(t->mu);
        t->cv.wait(lock, [&] { return t->job == nullptr; });
    }
    std::lock_guard<std::mutex> lock(g_mu);
    g_idle.push_back(t);
    return true;
}

render_thread_stats current_render_thread_stats() {
    std::lock_guard<std::mutex> lock(g_mu);
    return {g_kept, g_fresh_runs};
}

}  // namespace rc::llama
