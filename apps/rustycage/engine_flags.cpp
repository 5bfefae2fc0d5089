#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "commands.h"
#include "util/byte_size.h"
#include "util/log.h"

namespace rc::cli {

std::string default_models_dir() {
    const char * home = std::getenv("HOME");
    return std::string(home && *home ? home : ".") + "/.rustycage/models";
}

void add_engine_flags(CLI::App & cmd, engine_flags & f) {
    f.models_dir = default_models_dir();
    cmd.add_option("--models-dir", f.models_dir, "Directory of servable models (*.gguf)")->envname("RUSTYCAGE_MODELS_DIR")->capture_default_str();
    f.ctx_size = cmd.add_option("-c,--ctx-size", f.engine.n_ctx, "KV cells of a model's context, shared by its sequences (0: model's training length)")
        ->envname("RUSTYCAGE_CTX_SIZE")->check(CLI::Range(0, 1 << 24))->capture_default_str();
    cmd.add_option("--parallel", f.engine.n_parallel, "Sequences decoding at once per model")
        ->envname("RUSTYCAGE_PARALLEL")->check(CLI::Range(1, 128))->capture_default_str();
    cmd.add_option("-t,--threads", f.engine.n_threads, "CPU threads for compute (0: all cores)")
        ->envname("RUSTYCAGE_THREADS")->check(CLI::Range(0, 1024))->capture_default_str();
    cmd.add_option("--compute-nice", f.engine.compute_nice,
                   "Run compute threads this much nicer than the threads that answer clients, so a token never waits for "
                   "a compute time slice (0: same priority)")
        ->envname("RUSTYCAGE_COMPUTE_NICE")->check(CLI::Range(0, 19))->capture_default_str();
    cmd.add_option("-b,--batch-size", f.engine.n_batch, "Tokens per decode step")->envname("RUSTYCAGE_BATCH_SIZE")->check(CLI::Range(1, 1 << 16))->capture_default_str();
    cmd.add_option("--prefill-chunk", f.engine.prefill_chunk, "Most prefill tokens per step while other requests decode")
        ->envname("RUSTYCAGE_PREFILL_CHUNK")->check(CLI::Range(1, 1 << 16))->capture_default_str();
    cmd.add_option("--max-step-ms,--prefill-step-ms", f.engine.max_step_ms,
                   "While requests decode, a step (their tokens plus a prefill chunk) takes at most this long by the "
                   "step cost model calibrated at load; bounds their token gaps (0: off)")
        ->envname("RUSTYCAGE_MAX_STEP_MS")->check(CLI::Range(0.0, 60000.0))->capture_default_str();
    cmd.add_option("--gpu-layers", f.n_gpu_layers, "Layers to offload to a GPU backend (-1: all)")->envname("RUSTYCAGE_GPU_LAYERS")->capture_default_str();
    f.engine.flash_attn_auto = true;
    cmd.add_flag("--flash-attn", f.engine.flash_attn,
                 "Use flash attention (--flash-attn=false: never; default: on when a model's layers run on a GPU, off on the CPU)")
        ->each([&f](const std::string &) { f.engine.flash_attn_auto = false; })
        ->envname("RUSTYCAGE_FLASH_ATTN");
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

    // KV tiering (docs/KV_TIERING.md).
    auto & kv = f.engine.kv;
    cmd.add_option("--kv-block-size", kv.block_size, "Tokens per KV block")->envname("RUSTYCAGE_KV_BLOCK_SIZE")->check(CLI::Range(1, 4096))->capture_default_str();
    cmd.add_option("--kv-cached-sequences", kv.cached_sequences, "Finished conversations kept in the context for reuse (0: none)")
        ->envname("RUSTYCAGE_KV_CACHED_SEQUENCES")->check(CLI::Range(0, 200))->capture_default_str();
    cmd.add_option("--kv-checkpoint-blocks", kv.checkpoint_blocks,
                   "Sliding-window, hybrid and recurrent models: keep a state every this many blocks of a prompt, besides message "
                   "boundaries (0: only those)")
        ->envname("RUSTYCAGE_KV_CHECKPOINT_BLOCKS")->check(CLI::Range(0, 4096))->capture_default_str();
    cmd.add_option_function<std::string>(
           "--kv-host-budget",
           [&f](const std::string & v) {
               f.engine.kv.host_budget = parse_size_flag("--kv-host-budget", v);
               f.host_budget_given = true;
           },
           "Host RAM for KV blocks, e.g. 4GiB or 512MiB (0: tier off; default: a quarter of available RAM)")
        ->envname("RUSTYCAGE_KV_HOST_BUDGET");
    cmd.add_option("--kv-disk-dir", f.kv_disk_dir, "Directory for the disk tier (default: off)")->envname("RUSTYCAGE_KV_DISK_DIR");
    cmd.add_option_function<std::string>(
           "--kv-disk-budget", [&kv](const std::string & v) { kv.disk_budget = parse_size_flag("--kv-disk-budget", v); },
           "Disk space for KV blocks (default 20GiB when --kv-disk-dir is set)")
        ->envname("RUSTYCAGE_KV_DISK_BUDGET");
    cmd.add_flag("--kv-write-through", kv.write_through, "Write blocks to disk synchronously instead of in the background")
        ->envname("RUSTYCAGE_KV_WRITE_THROUGH");
}

size_t parse_size_flag(const std::string & flag, const std::string & text) {
    auto v = parse_byte_size(text);
    if (!v) throw CLI::ValidationError(flag, "must be a size such as 512MiB, 4GiB or 1000000 (bytes)");
    return *v;
}

void resolve_kv_defaults(engine_flags & f) {
    // The step cost model is remembered beside the models (engine/step_cost_cache.h): a restart
    // schedules its first request by what the last run learned, without timed decodes at load.
    f.engine.step_cost_file = std::filesystem::path(f.models_dir) / ".state" / "step-cost.json";
    auto & kv = f.engine.kv;
    if (!f.host_budget_given) kv.host_budget = available_memory_bytes() / 4;
    if (!f.kv_disk_dir.empty()) {
        kv.disk_dir = f.kv_disk_dir;
        if (kv.disk_budget == 0) kv.disk_budget = size_t(20) << 30;
    }
}

status check_writable_dir(const std::string & flag, const std::string & dir) {
    namespace fs = std::filesystem;
    auto bad = [&](const std::string & why) { return make_error(errc::invalid_argument, flag + " " + dir + ": " + why); };
    if (dir.empty()) return bad("is empty");
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec && !fs::is_directory(dir)) {
        return bad(ec == std::errc::not_a_directory || ec == std::errc::file_exists ? "cannot be a directory: a part of the path is a file"
                                                                                   : "cannot be created (" + ec.message() + ")");
    }
    if (!fs::is_directory(dir)) return bad("is not a directory");
    std::string probe = (fs::path(dir) / ".rustycage-write-check-XXXXXX").string();
    int fd = ::mkstemp(probe.data());
    if (fd < 0) return bad(std::string("is not writable (") + std::strerror(errno) + ")");
    const bool wrote = ::write(fd, "x", 1) == 1 && ::fsync(fd) == 0;
    const int err = errno;
    ::close(fd);
    ::unlink(probe.c_str());
    if (!wrote) return bad(std::string("cannot take a file (") + std::strerror(err) + ")");
    return {};
}

status check_engine_paths(const engine_flags & f) {
    if (auto st = check_writable_dir("--models-dir", f.models_dir); !st) return st;
    if (!f.kv_disk_dir.empty()) {
        if (auto st = check_writable_dir("--kv-disk-dir", f.kv_disk_dir); !st) return st;
    }
    return {};
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
