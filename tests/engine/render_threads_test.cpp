// llama::run_on_render_thread (src/llama/render_threads.h): renders reuse kept large-stack threads,
// more renders at once than kept threads still all run at once, and a deep render's stack pages are
// handed back to the system.
#include <gtest/gtest.h>
#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "llama/render_threads.h"

using rc::llama::run_on_render_thread;

namespace {

size_t resident_bytes() {
    std::ifstream statm("/proc/self/statm");
    size_t size = 0, resident = 0;
    statm >> size >> resident;
    return resident * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

// Touches about depth * 64 KiB of stack.
__attribute__((noinline)) size_t recurse(int depth) {
    volatile char frame[64 * 1024];
    for (size_t i = 0; i < sizeof frame; i += 4096) frame[i] = static_cast<char>(depth);
    return depth == 0 ? frame[0] : recurse(depth - 1) + frame[4096];
}

}  // namespace

TEST(render_threads, one_render_after_another_reuses_a_kept_thread_not_the_callers) {
    std::set<pthread_t> seen;
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(run_on_render_thread([&] { seen.insert(pthread_self()); }));
    EXPECT_EQ(seen.size(), 1u) << "sequential renders should all find the same idle kept thread";
    EXPECT_EQ(seen.count(pthread_self()), 0u);
    const auto stats = rc::llama::current_render_thread_stats();
    EXPECT_GE(stats.kept, 1u);
    EXPECT_LE(stats.kept, rc::llama::k_kept_render_threads);
}

TEST(render_threads, more_renders_at_once_than_kept_threads_all_run_at_once) {
    const size_t n = rc::llama::k_kept_render_threads * 2;
    const size_t fresh_before = rc::llama::current_render_thread_stats().fresh_runs;
    std::mutex mu;
    std::condition_variable cv;
    size_t inside = 0;
    bool all_met = true;
    std::vector<std::thread> callers;
    for (size_t i = 0; i < n; ++i)
        callers.emplace_back([&] {
            ASSERT_TRUE(run_on_render_thread([&] {
                std::unique_lock<std::mutex> lock(mu);
                ++inside;
                cv.notify_all();
                // Every render waits until all are inside at once: a queue behind kept threads would time out.
                if (!cv.wait_for(lock, std::chrono::seconds(20), [&] { return inside == n; })) all_met = false;
            }));
        });
    for (auto & t : callers) t.join();
    EXPECT_TRUE(all_met) << inside << " of " << n << " renders were running at once";
    const auto stats = rc::llama::current_render_thread_stats();
    EXPECT_LE(stats.kept, rc::llama::k_kept_render_threads);
    EXPECT_GE(stats.fresh_runs - fresh_before, n - rc::llama::k_kept_render_threads);
}

TEST(render_threads, a_deep_render_leaves_no_resident_stack_on_its_kept_thread) {
    ASSERT_TRUE(run_on_render_thread([] {}));  // a kept thread exists and is idle
    const size_t before = resident_bytes();
    size_t peak = 0;
    ASSERT_TRUE(run_on_render_thread([&] {
        recurse(1600);  // ~100 MiB of stack
        peak = resident_bytes();
    }));
    const size_t after = resident_bytes();
    EXPECT_GT(peak, before + (size_t{80} << 20)) << "the recursion did not touch the stack it was meant to";
    EXPECT_LT(after, before + (size_t{16} << 20)) << "kept thread still holds " << ((after - before) >> 20) << " MiB";
    // ... and the thread is still good for the next render.
    int ran = 0;
    ASSERT_TRUE(run_on_render_thread([&] { ran = 1; }));
    EXPECT_EQ(ran, 1);
}
