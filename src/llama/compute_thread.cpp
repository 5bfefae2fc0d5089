#include "llama/compute_thread.h"

#include <dlfcn.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cerrno>

namespace rc::llama {

namespace {

using pause_fn = int (*)(int);
constexpr int omp_pause_soft = 1;  // omp_pause_resource_t (OpenMP 5.0)

// Looked up at run time rather than linked: a release build loads the CPU backend, and with it the
// OpenMP runtime, as a module, and builds without OpenMP have none. RTLD_NOLOAD finds a runtime
// only if one is already loaded.
pause_fn find_pause() {
    for (const char * lib : {"libgomp.so.1", "libomp.so", "libomp.so.5"}) {
        if (void * handle = dlopen(lib, RTLD_NOW | RTLD_NOLOAD)) {
            auto fn = reinterpret_cast<pause_fn>(dlsym(handle, "omp_pause_resource_all"));
            dlclose(handle);  // drops only our reference: the runtime stays loaded by its user
            if (fn) return fn;
        }
    }
    return nullptr;
}

}  // namespace

void release_compute_threads() {
    // Looked for until found: a thread that has computed nothing yet may call before any runtime loads.
    static std::atomic<pause_fn> found{nullptr};
    pause_fn pause = found.load();
    if (!pause && (pause = find_pause())) found.store(pause);
    if (pause) pause(omp_pause_soft);
}

bool lower_compute_priority(int nice) {
    if (nice <= 0) return true;
    // Linux keeps a nice value per thread: PRIO_PROCESS with who = 0 is the calling thread only.
    errno = 0;
    const int now = getpriority(PRIO_PROCESS, 0);
    if (errno != 0) return false;
    return setpriority(PRIO_PROCESS, 0, std::min(19, now + nice)) == 0;
}

}  // namespace rc::llama
