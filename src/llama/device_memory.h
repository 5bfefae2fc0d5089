#pragma once
// What a model would hold on each device, measured before it is loaded: llama.cpp builds the model
// and a context from the GGUF's header without allocating (common_get_device_memory_data, the
// measurement under llama-server's --fit) and reports each buffer's bytes. The device fit
// (models/device_fit.h) chooses layers and context cells from it.
#include <llama.h>

#include <cstdint>
#include <string>
#include <vector>

#include "util/result.h"

namespace rc::llama {

struct device_memory {
    std::string name;   // "CUDA0", "Vulkan0"; "host" for system memory
    bool host = false;  // the last entry: what stays in system memory
    int64_t free = 0, total = 0;
    uint64_t model = 0, context = 0, compute = 0;
    uint64_t used() const { return model + context + compute; }
};

struct memory_measure {
    std::vector<device_memory> devices;  // the model's GPU devices in order, then the host
    int offloadable_layers = 0;          // n_gpu_layers that puts everything on the devices (layers + output)
};

// `path`: one GGUF file (a split model cannot be measured: its parts are named by digest here).
// Errors: invalid_argument when llama.cpp cannot build the model or the context.
result<memory_measure> measure_memory(const std::string & path, int n_gpu_layers, const llama_context_params & cparams);

}  // namespace rc::llama
