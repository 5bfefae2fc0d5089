#include "llama/backend.h"

#include <llama.h>

#include <mutex>
#include <string>

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
}  // namespace

void set_log_observer(log_observer observer) {
    std::lock_guard lock(g_observer_mutex);
    g_observer = std::move(observer);
}

void ensure_backend() {
    static std::once_flag once;
    std::call_once(once, [] {
        llama_log_set(forward_log, nullptr);
        llama_backend_init();
    });
}

}  // namespace rc::llama
