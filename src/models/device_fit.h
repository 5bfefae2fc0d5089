#pragma once
// Fits one model to device memory before it loads (docs/MEMORY.md "Fit to the device"):
//   1. its weights on the device first, as many layers as fit;
//   2. then the largest context pool that leaves the margin;
//   3. the KV host and disk tiers hold every conversation the pool does not.
// So a context that does not fit shrinks, down to one request of --max-tokens, rather than push
// layers off the device; only without tiers does a set context stay whole and the layers move.
// The inputs are llama.cpp's own measurement of the model (llama/device_memory.h); this file is the
// policy alone, a pure function.
#include <cstdint>
#include <string>

#include "util/result.h"

namespace rc::models {

struct fit_inputs {
    uint64_t available = 0;   // device bytes this model may take: free (or --device-memory) minus the margin and other models
    uint64_t host_available = UINT64_MAX;  // system memory for what stays off the device
    int layers = 0;           // offloadable layers
    uint64_t weights = 0;     // device bytes of the weights with every layer offloaded
    uint64_t cell_bytes = 0;  // device bytes of one context cell with every layer offloaded
    uint64_t compute = 0;     // compute buffers on the device, for a pool of no cells
    uint64_t compute_per_cell = 0;  // and what each cell of the pool adds to them (without flash
                                    // attention the attention scores grow with the context)
    int cells = 0;            // the context pool wanted (--ctx-size or its default)
    bool cells_set = false;   // --ctx-size was given
    int floor_cells = 0;      // one request of --max-tokens
    bool tiers = false;       // a KV host or disk tier holds what the pool does not
    int user_layers = -1;     // --gpu-layers; -1: the fit chooses
};

struct fit_choice {
    int layers = 0;
    int cells = 0;
    uint64_t device_bytes = 0;  // weights, context and compute on the device
    uint64_t weights_bytes = 0, context_bytes = 0, compute_bytes = 0;  // its parts
    uint64_t host_bytes = 0;    // weights and context of the layers left in system memory
};

// What `layers` offloaded layers and a pool of `cells` take on the device and off it.
fit_choice footprint(const fit_inputs & in, int layers, int cells);

// Errors: invalid_argument naming the numbers (a set --gpu-layers or --ctx-size that cannot fit, or
// not even one request of --max-tokens).
result<fit_choice> fit_to_device(const fit_inputs & in);

}  // namespace rc::models
