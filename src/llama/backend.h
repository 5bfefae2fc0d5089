#pragma once
// Process-wide llama.cpp initialisation. Safe to call from any thread, any number of times.
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rc::llama {

// Sees every line llama.cpp logs, at any level, on the thread that logs it (tests turn lines such
// as "failed to find a memory slot" into failures). One observer; an empty one removes it.
using log_observer = std::function<void(std::string_view line)>;
void set_log_observer(log_observer observer);

// Initialises the ggml backends once and routes llama.cpp's own log lines into rc::log
// (llama.cpp info chatter at debug level; its warnings and errors as ours).
// A GGML_BACKEND_DL build (the release artifacts) links no backend in: they are modules loaded
// here from `<executable dir>/../lib` (the artifact's lib/), then the executable's own dir; ggml
// picks the best CPU variant the host supports. GGML_BACKEND_PATH may name one more module.
void ensure_backend();

// Where the backend modules were loaded from ("" when the backends are linked in statically).
std::string backend_module_dir();

struct backend_device {
    std::string name;         // "CPU", "Vulkan0", "CUDA0"
    std::string description;  // the CPU model or GPU name
    std::string type;         // cpu, gpu, igpu, accel
    size_t memory_total = 0;  // bytes; for the CPU, the host's RAM
    size_t memory_free = 0;
};
// The devices ggml offers, in its order. Calls ensure_backend().
std::vector<backend_device> backend_devices();

struct backend_features {
    std::string backend;                                       // "CPU", "Vulkan"
    std::vector<std::pair<std::string, std::string>> features;  // ("AVX2", "1"), …: what it was built for
};
// Per registered backend, the features it reports (the loaded CPU variant shows which kernels run).
std::vector<backend_features> backend_feature_list();

}  // namespace rc::llama
