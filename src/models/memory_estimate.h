#pragma once
// How much memory a model will take once loaded, estimated from its GGUF header before loading:
// the weights (file size), the KV cache for the context the engine will create, and the compute
// and output buffers. Used to keep loaded models within the memory budget. An estimate: llama.cpp
// sizes its compute buffers from the graph, which is not known before loading; the compute term
// follows what its worst-case reservation holds (memory_estimate.cpp), within a few percent either way.
#include <cstdint>

#include "engine/engine.h"
#include "models/local_catalog.h"

namespace rc::models {

struct memory_estimate {
    uint64_t weights = 0;
    uint64_t kv_cache = 0;
    uint64_t buffers = 0;
    uint64_t total() const { return weights + kv_cache + buffers; }
};

memory_estimate estimate_memory(const model_entry & e, const engine::engine_options & opts);

// Physical RAM of this machine (0 when unknown).
uint64_t physical_memory_bytes();

// Total memory of the GPU devices ggml's backends report (0 on CPU-only builds).
uint64_t gpu_memory_bytes();

// The default --memory-budget: 80% of RAM. (Device memory is the device fit's: model_fit.h.)
uint64_t default_memory_budget();

}  // namespace rc::models
