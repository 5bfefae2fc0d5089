#pragma once
// What the host has: compute devices as ggml sees them (the same backends the server loads), host
// memory from /proc/meminfo, the CPU model. Read by the agent for its host record and incidents.
// Any thread; device enumeration initialises the llama.cpp backends once per process.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fleet/host/host_record.h"

namespace rc::fleet {

struct hardware_facts {
    std::vector<device_fact> devices;
    std::string backend;  // "cpu", or the non-CPU device types' backend names ("CUDA", "Vulkan", …) joined by '+'
    std::string cpu_model;
    uint64_t memory_total = 0, memory_available = 0;
};

hardware_facts read_hardware();
nlohmann::ordered_json to_json(const hardware_facts & h);

}  // namespace rc::fleet
