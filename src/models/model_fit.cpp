#include "models/model_fit.h"

#include <algorithm>

#include "llama/backend.h"
#include "llama/device_memory.h"

namespace rc::models {

namespace {

constexpr uint64_t k_default_margin = 1ull << 30;  // llama-server's --fit-target
constexpr int k_default_floor = 4096;              // llama-server's --fit-ctx

// One request of --max-tokens (else llama-server's floor), rounded up to whole KV blocks.
int floor_cells(const fit_settings & fs, const engine::engine_options & eo) {
    const int block = std::max(1, eo.kv.block_size);
    const int tokens = fs.max_tokens > 0 ? fs.max_tokens : k_default_floor;
    return (tokens + block - 1) / block * block;
}

bool any_gpu() {
    for (const auto & d : llama::backend_devices())
        if (d.type == "gpu" || d.type == "igpu") return true;
    return false;
}

}  // namespace

nlohmann::ordered_json device_plan::to_json() const {
    return {{"device", device},           {"device_memory", device_total},   {"layers", layers},
            {"layers_total", layers_total}, {"context_cells", cells},         {"cells_wanted", cells_wanted},
            {"device_bytes", device_bytes}, {"weights_bytes", weights_bytes}, {"context_bytes", context_bytes},
            {"compute_bytes", compute_bytes}, {"host_bytes", host_bytes}};
}

result<device_plan> plan_device(const model_entry & e, const engine::engine_options & eo, const llama::model_load_options & lo,
                                const fit_settings & fs, uint64_t others_on_device, uint64_t loading_on_device, uint64_t host_available) {
    device_plan plan;
    if (e.parts.size() > 1) return plan;
    if (fs.device_memory == 0 && !any_gpu()) return plan;  // nothing to fit to: no load to look at
    auto shapes_opts = lo;
    shapes_opts.no_alloc = true;
    auto shapes = llama::model::load(e.path.string(), shapes_opts);
    if (!shapes) return shapes.err();
    const auto & info = shapes.value()->info();
    if (info.is_embedding) return plan;
    auto cp = engine::context_params(info, eo);
    if (!cp) return cp.err();
    const int all_layers = 999;
    auto measured = llama::measure_memory(e.path.string(), lo.n_gpu_layers >= 0 ? lo.n_gpu_layers : all_layers, cp.value());
    if (!measured) return measured.err();
    // At --gpu-layers N the measure holds N layers; scale it to all of them.
    const auto & m = measured.value();
    // The compute buffers on the device (or on the host standing in for one, with --device-memory).
    auto device_compute = [](const llama::memory_measure & mm, bool gpu) {
        uint64_t sum = 0;
        for (const auto & d : mm.devices)
            if (!d.host) sum += d.compute;
        return gpu ? sum : mm.devices.back().compute;
    };

    fit_inputs in;
    uint64_t device_free = 0, device_total = 0;
    for (const auto & d : m.devices) {
        if (d.host) continue;
        in.weights += d.model;
        in.cell_bytes += d.context;
        device_free += static_cast<uint64_t>(std::max<int64_t>(0, d.free));
        device_total += static_cast<uint64_t>(std::max<int64_t>(0, d.total));
        plan.device += (plan.device.empty() ? "" : "+") + d.name;
    }
    const bool gpu = device_total > 0;
    if (!gpu && fs.device_memory == 0) return plan;
    if (!gpu) {
        // No GPU: with --device-memory the host plays the device, so the policy runs anywhere.
        const auto & h = m.devices.back();
        in.weights = h.model;
        in.cell_bytes = h.context;
        plan.device = "CPU (--device-memory)";
    }
    in.compute = device_compute(m, gpu);
    const int measured_layers = lo.n_gpu_layers >= 0 ? std::min(lo.n_gpu_layers, m.offloadable_layers) : m.offloadable_layers;
    if (gpu && measured_layers > 0 && measured_layers < m.offloadable_layers) {
        in.weights = in.weights / static_cast<uint64_t>(measured_layers) * static_cast<uint64_t>(m.offloadable_layers);
        in.cell_bytes = in.cell_bytes / static_cast<uint64_t>(measured_layers) * static_cast<uint64_t>(m.offloadable_layers);
    }
    in.cells = static_cast<int>(cp.value().n_ctx);
    in.cell_bytes /= std::max(1, in.cells);
    in.layers = m.offloadable_layers;
    in.cells_set = fs.ctx_set;
    in.floor_cells = floor_cells(fs, eo);
    in.tiers = eo.kv.host_budget > 0 || !eo.kv.disk_dir.empty();
    in.user_layers = lo.n_gpu_layers;
    in.host_available = host_available;

    uint64_t total = fs.device_memory > 0 ? fs.device_memory : device_total;
    const uint64_t margin = fs.margin >= 0 ? static_cast<uint64_t>(fs.margin) : std::min(k_default_margin, total / 8);
    // A real device's free memory already excludes loaded models, not loads still under way; the cap
    // counts them all itself.
    uint64_t room = fs.device_memory > 0 ? (fs.device_memory > others_on_device ? fs.device_memory - others_on_device : 0) : UINT64_MAX;
    if (gpu) room = std::min(room, device_free > loading_on_device ? device_free - loading_on_device : 0);
    in.available = room > margin ? room - margin : 0;

    auto choice = fit_to_device(in);
    // The compute buffers were measured for the whole context asked for. Without flash attention
    // they grow with it (bench-tiny: 67 MB at 4096 cells, 174 MB at 16384), so a fit
    // that gave up layers or cells for them would have fared better with a smaller pool: measured
    // again at the smallest pool the fit may choose, the two measures give compute per cell, and the
    // fit runs again with it — all layers with a smaller pool win over fewer with a larger one.
    const int wanted = in.cells;
    // Not below a micro-batch: a context smaller than one holds smaller batches, whose buffers
    // (the logits' above all) shrink with them, and that drop is not the pool's to count per cell.
    const int ubatch = static_cast<int>(cp.value().n_ubatch);
    const int smallest = (std::max(std::clamp(in.floor_cells, 1, wanted), ubatch) + 255) / 256 * 256;
    const int top = in.user_layers >= 0 ? std::min(in.user_layers, in.layers) : in.layers;
    const bool gave_up = !choice || choice->cells < wanted || choice->layers < top;
    if (gave_up && smallest < wanted && (!fs.ctx_set || in.tiers)) {
        auto smaller = cp.value();
        smaller.n_ctx = static_cast<uint32_t>(smallest);
        if (auto again = llama::measure_memory(e.path.string(), lo.n_gpu_layers >= 0 ? lo.n_gpu_layers : all_layers, smaller)) {
            const uint64_t at_wanted = in.compute, at_smallest = device_compute(again.value(), gpu);
            if (at_smallest < at_wanted) {
                in.compute_per_cell = (at_wanted - at_smallest) / static_cast<uint64_t>(wanted - smallest);
                const uint64_t grown = in.compute_per_cell * static_cast<uint64_t>(smallest);
                in.compute = at_smallest > grown ? at_smallest - grown : 0;
                choice = fit_to_device(in);
            }
        }
    }
    if (!choice) return choice.err();
    plan.fitted = true;
    plan.gpu = gpu;
    plan.device_total = total;
    plan.layers = choice->layers;
    plan.layers_total = in.layers;
    plan.cells = choice->cells;
    plan.cells_wanted = in.cells;
    plan.device_bytes = choice->device_bytes;
    plan.host_bytes = choice->host_bytes;
    plan.weights_bytes = choice->weights_bytes;
    plan.context_bytes = choice->context_bytes;
    plan.compute_bytes = choice->compute_bytes;
    return plan;
}

bool flash_attn_for(const engine::engine_options & eo, const device_plan & plan) {
    if (!eo.flash_attn_auto) return eo.flash_attn;
    return plan.fitted && plan.gpu && plan.layers > 0;
}

}  // namespace rc::models
