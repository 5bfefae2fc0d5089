#pragma once
// The device fit of one catalog model (device_fit.h's policy) with its inputs measured: llama.cpp
// builds the model and its engine's context without allocating (llama/device_memory.h), and the
// devices' free memory, the --device-memory cap, the margin and what other loaded models hold give
// what this one may take.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "llama/model.h"
#include "models/device_fit.h"
#include "models/local_catalog.h"

namespace rc::models {

struct fit_settings {
    uint64_t device_memory = 0;  // --device-memory: what the fit believes the devices hold (0: what they report)
    int64_t margin = -1;         // --fit-margin: bytes left free on the device (-1: 1 GiB, at most an eighth of it)
    bool ctx_set = false;        // --ctx-size was given
    int max_tokens = 0;          // --max-tokens when given: one request's floor under the context pool (0: 4096
                                 // cells, llama-server's --fit-ctx)
};

// What the fit chose for a model. `fitted` is false when there is nothing to fit to (a CPU build
// without --device-memory, an embedding model, a split GGUF): the options load as they are.
struct device_plan {
    bool fitted = false;
    std::string device;         // "CUDA0", "Vulkan0", "CPU (--device-memory)"
    bool gpu = false;           // a GPU device (not the host standing in for one)
    uint64_t device_total = 0;  // what the fit took the device to hold
    int layers = -1;            // n_gpu_layers to load with (-1: as configured)
    int layers_total = 0;
    int cells = 0;              // the context pool
    int cells_wanted = 0;
    uint64_t device_bytes = 0, host_bytes = 0;
    uint64_t weights_bytes = 0, context_bytes = 0, compute_bytes = 0;  // device_bytes' parts
    bool whole() const { return layers >= layers_total && cells >= cells_wanted; }
    // Every number, as /api/ps's `fit` and a load-failure incident carry it.
    nlohmann::ordered_json to_json() const;
};

// `others_on_device`: device bytes other models hold or are about to (counted against
// --device-memory); `loading_on_device`: the part of it whose loads have not allocated yet (a real
// device's free memory excludes the rest already). Errors: invalid_argument naming the numbers.
result<device_plan> plan_device(const model_entry & e, const engine::engine_options & eo, const llama::model_load_options & lo,
                                const fit_settings & fs, uint64_t others_on_device, uint64_t loading_on_device, uint64_t host_available);

// Flash attention for a load: as set by --flash-attn, else on when the plan puts layers on a GPU
// device (llama-server's -fa auto turns it on there too) and off on the CPU, where it measured slower.
// Without it, ggml's Vulkan backend on Mesa's lavapipe crashed on a 1,000-token prompt into a
// 13,000-cell pool or larger (llama-server -fa off as well; docs/MODELS.md).
bool flash_attn_for(const engine::engine_options & eo, const device_plan & plan);

}  // namespace rc::models
