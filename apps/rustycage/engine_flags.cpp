#include <cstdlib>
#include <iostream>

#include "commands.h"
#include "util/log.h"

namespace rc::cli {

std::string default_models_dir() {
    const char * home = std::getenv("HOME");
    return std::string(home && *home ? home : ".") + "/.rustycage/models";
}

void add_engine_flags(CLI::App & cmd, engine_flags & f) {
    f.models_dir = default_models_dir();
    cmd.add_option("--models-dir", f.models_dir, "Directory of servable models (*.gguf)")->envname("RUSTYCAGE_MODELS_DIR")->capture_default_str();
    cmd.add_option("-c,--ctx-size", f.engine.n_ctx, "KV cells of a model's context, shared by its sequences (0: model's training length)")
        ->envname("RUSTYCAGE_CTX_SIZE")->check(CLI::Range(0, 1 << 24))->capture_default_str();
    cmd.add_option("--parallel", f.engine.n_parallel, "Sequences decoding at once per model")
        ->envname("RUSTYCAGE_PARALLEL")->check(CLI::Range(1, 128))->capture_default_str();
    cmd.add_option("-t,--threads", f.engine.n_threads, "CPU threads for compute (0: all cores)")
        ->envname("RUSTYCAGE_THREADS")->check(CLI::Range(0, 1024))->capture_default_str();
    cmd.add_option("-b,--batch-size", f.engine.n_batch, "Tokens per decode step")->envname("RUSTYCAGE_BATCH_SIZE")->check(CLI::Range(1, 1 << 16))->capture_default_str();
    cmd.add_option("--prefill-chunk", f.engine.prefill_chunk, "Prefill tokens per sequence per step while others decode")
        ->envname("RUSTYCAGE_PREFILL_CHUNK")->check(CLI::Range(1, 1 << 16))->capture_default_str();
    cmd.add_option("--gpu-layers", f.n_gpu_layers, "Layers to offload to a GPU backend (-1: all)")->envname("RUSTYCAGE_GPU_LAYERS")->capture_default_str();
    cmd.add_flag("--flash-attn", f.engine.flash_attn, "Use flash attention")->envname("RUSTYCAGE_FLASH_ATTN");
    cmd.add_option_function<std::string>(
           "--kv-type",
           [&f](const std::string & v) {
               auto t = engine::parse_kv_type(v);
               if (!t) throw CLI::ValidationError("--kv-type", "must be f16, f32 or q8_0");
               f.engine.kv_type = *t;
           },
           "KV cache cell type: f16 (default), f32, q8_0 (needs --flash-attn)")
        ->envname("RUSTYCAGE_KV_TYPE");
    cmd.add_option("--log-level", f.log_level, "debug, info, warn or error")->envname("RUSTYCAGE_LOG_LEVEL")->capture_default_str();
}

bool apply_log_level(const std::string & level) {
    rc::log::level lvl;
    if (!rc::log::parse_level(level, lvl)) {
        std::cerr << "error: --log-level must be debug, info, warn or error (got '" << level << "')\n";
        return false;
    }
    rc::log::set_level(lvl);
    return true;
}

}  // namespace rc::cli
