#pragma once
// Where graph computations run, and the OpenMP worker pools they leave behind.
//
// ggml's CPU backend parallelises with OpenMP, and libgomp keeps a pool of worker threads for every
// thread that ever computed a graph, for as long as that thread lives. It counts all of them, and once
// they outnumber the CPUs every barrier sleeps instead of spinning: each decode step gets several
// times slower (3x on two cores). So engines compute only on their own threads and hand their pool
// back when idle (a second loaded model must not slow the first), and one-off work (the quarantine's
// test generation) runs on a thread of its own, whose pool ends with it.
#include <thread>
#include <type_traits>

namespace rc::llama {

template <class F>
auto on_own_thread(F && fn) {
    std::invoke_result_t<F &> out{};
    std::thread worker([&] { out = fn(); });
    worker.join();
    return out;
}

// Ends the calling thread's OpenMP worker pool (the next graph starts a new one). Does nothing when
// llama.cpp was built without OpenMP. Not from inside a graph computation.
void release_compute_threads();

// Lowers the calling thread's scheduling priority by `nice` (0-19; capped at 19), before it computes
// its first graph, so the OpenMP or ggml workers it starts inherit it. A graph keeps every core busy
// (the workers spin between steps), so the threads that answer clients, woken to send a token, would
// otherwise wait for a compute thread's time slice: 2-3 ms per gap on two cores. Lower-priority
// compute threads give way at once and lose almost nothing (those threads run a few microseconds per
// token). Returns false, changing nothing, when the system refuses.
bool lower_compute_priority(int nice);

}  // namespace rc::llama
