#pragma once
// Process-wide llama.cpp initialisation. Safe to call from any thread, any number of times.
namespace rc::llama {

// Initialises the ggml backends once and routes llama.cpp's own log lines into rc::log
// (llama.cpp info chatter at debug level; its warnings and errors as ours).
void ensure_backend();

}  // namespace rc::llama
