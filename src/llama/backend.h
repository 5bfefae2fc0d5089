#pragma once
// Process-wide llama.cpp initialisation. Safe to call from any thread, any number of times.
#include <functional>
#include <string_view>

namespace rc::llama {

// Sees every line llama.cpp logs, at any level, on the thread that logs it (tests turn lines such
// as "failed to find a memory slot" into failures). One observer; an empty one removes it.
using log_observer = std::function<void(std::string_view line)>;
void set_log_observer(log_observer observer);

// Initialises the ggml backends once and routes llama.cpp's own log lines into rc::log
// (llama.cpp info chatter at debug level; its warnings and errors as ours).
void ensure_backend();

}  // namespace rc::llama
