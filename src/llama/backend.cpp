#include "llama/backend.h"

#include <ggml-backend.h>
#include <llama.h>

#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>

#include "util/log.h"

namespace rc::llama {

namespace {
std::mutex g_observer_mutex;
log_observer g_observer;

void forward_log(ggml_log_level level, const char * text, void *) {
    // llama.cpp logs in fragments; a line ends with '\n'. Fragments of one line are rare and
    // harmless to print separately, so keep this stateless.
    std::string line(text ? text : "");
    while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
    if (line.empty()) return;
    {
        std::lock_guard lock(g_observer_mutex);
        if (g_observer) g_observer(line);
    }
    switch (level) {
        case GGML_LOG_LEVEL_ERROR: rc::log::error("llama.cpp", "log", {{"msg", line}}); break;
        case GGML_LOG_LEVEL_WARN: rc::log::warn("llama.cpp", "log", {{"msg", line}}); break;
        default: rc::log::debug("llama.cpp", "log", {{"msg", line}}); break;
    }
}
std::string g_module_dir;  // written once under ensure_backend's once_flag

std::filesystem::path executable_dir() {
    std::error_code ec;
    auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::filesystem::path() : exe.parent_path();
}

// A GGML_BACKEND_DL build registers nothing until its modules are loaded. Only the artifact's own
// directories are searched — never the current directory, which ggml's default search would include.
void load_backend_modules() {
    auto exe_dir = executable_dir();
    if (exe_dir.empty()) return;
    for (const auto & dir : {exe_dir.parent_path() / "lib", exe_dir}) {
        std::error_code ec;
        if (!std::filesystem::is_directory(dir, ec)) continue;
        ggml_backend_load_all_from_path(dir.c_str());
        if (ggml_backend_reg_count() > 0) {
            g_module_dir = dir.string();
            break;
        }
    }
    if (ggml_backend_reg_count() == 0)
        rc::log::error("llama", "no_backend_module", {{"searched", (exe_dir.parent_path() / "lib").string() + ", " + exe_dir.string()}});
}

std::string device_type_name(enum ggml_backend_dev_type t) {
    switch (t) {
        case GGML_BACKEND_DEVICE_TYPE_CPU: return "cpu";
        case GGML_BACKEND_DEVICE_TYPE_GPU: return "gpu";
        case GGML_BACKEND_DEVICE_TYPE_IGPU: return "igpu";
        default: return "accel";
    }
}
}  // namespace

void set_log_observer(log_observer observer) {
    std::lock_guard lock(g_observer_mutex);
    g_observer = std::move(observer);
}

void ensure_backend() {
    static std::once_flag once;
    std::call_once(once, [] {
        llama_log_set(forward_log, nullptr);
        if (ggml_backend_reg_count() == 0) load_backend_modules();
        llama_backend_init();
    });
}

std::string backend_module_dir() {
    ensure_backend();
    return g_module_dir;
}

std::vector<backend_device> backend_devices() {
    ensure_backend();
    std::vector<backend_device> out;
    for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
        ggml_backend_dev_t dev = ggml_backend_dev_get(i);
        backend_device d;
        d.name = ggml_backend_dev_name(dev);
        d.description = ggml_backend_dev_description(dev);
        d.type = device_type_name(ggml_backend_dev_type(dev));
        ggml_backend_dev_memory(dev, &d.memory_free, &d.memory_total);
        out.push_back(std::move(d));
    }
    return out;
}

std::vector<backend_features> backend_feature_list() {
    ensure_backend();
    std::vector<backend_features> out;
    for (size_t i = 0; i < ggml_backend_reg_count(); ++i) {
        ggml_backend_reg_t reg = ggml_backend_reg_get(i);
        backend_features b;
        b.backend = ggml_backend_reg_name(reg);
        auto get = reinterpret_cast<ggml_backend_get_features_t>(ggml_backend_reg_get_proc_address(reg, "ggml_backend_get_features"));
        if (get) {
            for (auto * f = get(reg); f && f->name; ++f) b.features.emplace_back(f->name, f->value ? f->value : "");
        }
        out.push_back(std::move(b));
    }
    return out;
}

}  // namespace rc::llama
