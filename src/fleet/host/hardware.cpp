#include "fleet/host/hardware.h"

#include <fstream>
#include <set>
#include <sstream>

#include "ggml-backend.h"
#include "llama/backend.h"

namespace rc::fleet {

namespace {

const char * type_name(enum ggml_backend_dev_type t) {
    switch (t) {
        case GGML_BACKEND_DEVICE_TYPE_CPU: return "cpu";
        case GGML_BACKEND_DEVICE_TYPE_GPU: return "gpu";
        case GGML_BACKEND_DEVICE_TYPE_IGPU: return "igpu";
        case GGML_BACKEND_DEVICE_TYPE_ACCEL: return "accel";
        default: return "other";
    }
}

}  // namespace

hardware_facts read_hardware() {
    hardware_facts h;
    llama::ensure_backend();
    std::set<std::string> backends;
    for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
        ggml_backend_dev_t dev = ggml_backend_dev_get(i);
        device_fact d;
        d.name = ggml_backend_dev_name(dev);
        d.description = ggml_backend_dev_description(dev);
        d.type = type_name(ggml_backend_dev_type(dev));
        size_t free = 0, total = 0;
        ggml_backend_dev_memory(dev, &free, &total);
        d.memory_free = free;
        d.memory_total = total;
        if (ggml_backend_dev_type(dev) != GGML_BACKEND_DEVICE_TYPE_CPU && ggml_backend_dev_type(dev) != GGML_BACKEND_DEVICE_TYPE_ACCEL)
            if (ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev)) backends.insert(ggml_backend_reg_name(reg));
        h.devices.push_back(std::move(d));
    }
    for (const auto & b : backends) h.backend += (h.backend.empty() ? "" : "+") + b;
    if (h.backend.empty()) h.backend = "cpu";

    std::ifstream mem("/proc/meminfo");
    for (std::string line; std::getline(mem, line);) {
        std::istringstream in(line);
        std::string key;
        uint64_t kib = 0;
        in >> key >> kib;
        if (key == "MemTotal:") h.memory_total = kib * 1024;
        if (key == "MemAvailable:") h.memory_available = kib * 1024;
    }
    std::ifstream cpu("/proc/cpuinfo");
    for (std::string line; std::getline(cpu, line);) {
        if (line.starts_with("model name")) {
            if (auto colon = line.find(':'); colon != std::string::npos) h.cpu_model = line.substr(colon + 2);
            break;
        }
    }
    return h;
}

nlohmann::ordered_json to_json(const hardware_facts & h) {
    nlohmann::ordered_json devices = nlohmann::ordered_json::array();
    for (const auto & d : h.devices)
        devices.push_back({{"name", d.name}, {"description", d.description}, {"type", d.type}, {"memory_total", d.memory_total}});
    return {{"backend", h.backend}, {"cpu", h.cpu_model}, {"memory_total", h.memory_total}, {"devices", devices}};
}

}  // namespace rc::fleet
