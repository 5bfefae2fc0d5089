#include "models/device_fit.h"

#include <algorithm>
#include <climits>
#include <optional>

#include "util/byte_size.h"

namespace rc::models {

namespace {

constexpr int k_cell_align = 256;  // llama.cpp pads a context to 256 cells

uint64_t share(uint64_t all_layers, int layers, int of) { return of > 0 ? all_layers / static_cast<uint64_t>(of) * static_cast<uint64_t>(layers) : 0; }

// The most cells that fit beside `layers` layers, or -1 when the layers alone do not fit.
int64_t most_cells(const fit_inputs & in, int layers) {
    const uint64_t fixed = in.compute + share(in.weights, layers, in.layers);
    if (fixed > in.available) return -1;
    const uint64_t per_cell = share(in.cell_bytes, layers, in.layers) + in.compute_per_cell;
    if (per_cell == 0) return INT_MAX;
    return static_cast<int64_t>(std::min<uint64_t>((in.available - fixed) / per_cell, INT_MAX));
}

std::string bytes(uint64_t b) { return format_byte_size(b); }

}  // namespace

fit_choice footprint(const fit_inputs & in, int layers, int cells) {
    fit_choice c;
    c.layers = layers;
    c.cells = cells;
    const uint64_t cell_all = in.cell_bytes * static_cast<uint64_t>(cells);
    c.weights_bytes = share(in.weights, layers, in.layers);
    c.context_bytes = share(cell_all, layers, in.layers);
    c.compute_bytes = in.compute + in.compute_per_cell * static_cast<uint64_t>(cells);
    c.device_bytes = c.weights_bytes + c.context_bytes + c.compute_bytes;
    c.host_bytes = share(in.weights, in.layers - layers, in.layers) + share(cell_all, in.layers - layers, in.layers);
    return c;
}

result<fit_choice> fit_to_device(const fit_inputs & in) {
    const bool may_shrink = !in.cells_set || in.tiers;
    const int floor = may_shrink ? std::clamp(in.floor_cells, 1, in.cells) : in.cells;
    const int top = in.user_layers >= 0 ? std::min(in.user_layers, in.layers) : in.layers;
    const int bottom = in.user_layers >= 0 ? top : 0;
    std::optional<fit_choice> host_bound;  // the candidate system memory could not take
    for (int layers = top; layers >= bottom; --layers) {
        const int64_t most = most_cells(in, layers);
        if (most < floor) continue;
        int cells = in.cells;
        if (most < in.cells) cells = std::max<int>(floor, static_cast<int>(most / k_cell_align * k_cell_align));
        auto c = footprint(in, layers, cells);
        if (c.host_bytes <= in.host_available) return c;
        host_bound = c;
        break;  // fewer layers only put more in system memory
    }
    const std::string what = in.user_layers >= 0 ? "--gpu-layers " + std::to_string(top)
                           : may_shrink          ? "one request of --max-tokens (" + std::to_string(floor) + " context cells)"
                                                 : "--ctx-size " + std::to_string(in.cells) + " (no KV tier to hold what a smaller context would not)";
    if (host_bound)
        return make_error(errc::invalid_argument, what + " does not fit: with " + std::to_string(host_bound->layers) + " layers on the device, " +
                                                      bytes(host_bound->host_bytes) + " stays in system memory, more than the " +
                                                      bytes(in.host_available) + " left (--memory-budget)");
    const auto need = footprint(in, top, floor);
    return make_error(errc::invalid_argument, what + " does not fit the device: " + std::to_string(top) + " layers and " + std::to_string(floor) +
                                                  " cells need " + bytes(need.device_bytes) + " (weights " + bytes(need.weights_bytes) + ", context " +
                                                  bytes(need.context_bytes) + ", compute " + bytes(need.compute_bytes) + ") and " +
                                                  bytes(in.available) +
                                                  " is available (device memory or --device-memory, less --fit-margin and other models)");
}

}  // namespace rc::models
