#include "llama/device_memory.h"

#include <fit.h>

#include <mutex>
#include <stdexcept>

#include "llama/backend.h"

namespace rc::llama {

result<memory_measure> measure_memory(const std::string & path, int n_gpu_layers, const llama_context_params & cparams) {
    ensure_backend();
    auto mparams = llama_model_default_params();
    mparams.n_gpu_layers = n_gpu_layers;
    std::vector<ggml_backend_dev_t> devs;
    uint32_t layers = 0, n_ctx_train = 0, n_expert = 0;
    common_device_memory_data_vec data;
    // llama.cpp swaps its global logger while it measures: one measurement at a time.
    static std::mutex measuring;
    std::lock_guard lock(measuring);
    try {
        data = common_get_device_memory_data(path.c_str(), &mparams, &cparams, devs, layers, n_ctx_train, n_expert, GGML_LOG_LEVEL_ERROR);
    } catch (const std::exception & e) {
        return make_error(errc::invalid_argument, "cannot measure the memory of " + path + ": " + e.what());
    }
    memory_measure m;
    m.offloadable_layers = static_cast<int>(layers);
    for (size_t i = 0; i < data.size(); ++i) {
        device_memory d;
        d.host = i + 1 == data.size();
        d.name = d.host ? "host" : (i < devs.size() ? ggml_backend_dev_name(devs[i]) : "device" + std::to_string(i));
        d.free = data[i].free;
        d.total = data[i].total;
        d.model = data[i].model;
        d.context = data[i].context;
        d.compute = data[i].compute;
        m.devices.push_back(d);
    }
    return m;
}

}  // namespace rc::llama
