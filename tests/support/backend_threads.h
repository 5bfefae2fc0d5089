#pragma once
// The thread count a "nothing lingers" test compares against. A GPU backend's driver starts threads
// of its own with the first context on a device and keeps them for the life of the process (Mesa's
// lavapipe under make test-vulkan: its rasterizer and queue threads); they are not the engine's.
// A context created and freed here starts them first. It computes no graph, so it leaves no OpenMP
// pool behind: on the CPU backend the count is what it was.
#include <llama.h>

#include <string>

#include "support/threads.h"
#include "test_models.h"

namespace rc::test {

inline int threads_with_backend_started(const std::string & preset) {
    if (auto m = shared_model(preset)) {
        auto cp = llama_context_default_params();
        cp.n_ctx = 256;
        cp.n_threads = cp.n_threads_batch = 1;
        if (llama_context * ctx = llama_init_from_model(m->get(), cp)) llama_free(ctx);
    }
    return process_threads();
}

}  // namespace rc::test
