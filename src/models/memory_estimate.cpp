#include "models/memory_estimate.h"

#include <unistd.h>

#include <algorithm>

#include <ggml-backend.h>

#include "llama/backend.h"
#include "llama/gguf_metadata.h"

namespace rc::models {

namespace {

uint64_t kv_cell_bytes(ggml_type t) {
    switch (t) {
        case GGML_TYPE_F32: return 4;
        case GGML_TYPE_Q8_0: return 1;  // 34 bytes per 32 values, rounded up below
        default: return 2;
    }
}

uint64_t array_size(const llama::gguf_metadata & md, const std::string & key) {
    const auto * e = md.find(key);
    return e && e->is_array ? e->array_size : 0;
}

}  // namespace

memory_estimate estimate_memory(const model_entry & e, const engine::engine_options & opts) {
    memory_estimate est;
    est.weights = e.size_bytes;
    auto md = llama::read_gguf_metadata(e.path.string());
    if (!md) {
        est.buffers = 64ull << 20;
        return est;
    }
    const std::string arch = md->get_string("general.architecture");
    auto get = [&](const std::string & k, uint64_t def) { return md->get_uint(arch + "." + k).value_or(def); };
    const uint64_t n_layer = get("block_count", 0);
    const uint64_t n_embd = get("embedding_length", 0);
    const uint64_t n_head = std::max<uint64_t>(1, get("attention.head_count", 1));
    const uint64_t n_head_kv = get("attention.head_count_kv", n_head);
    const uint64_t head_k = get("attention.key_length", n_embd / n_head);
    const uint64_t head_v = get("attention.value_length", n_embd / n_head);
    const uint64_t ctx_train = get("context_length", 4096);
    const uint64_t n_ctx = opts.n_ctx > 0 ? static_cast<uint64_t>(opts.n_ctx) : ctx_train;
    uint64_t per_token = n_layer * n_head_kv * (head_k + head_v) * kv_cell_bytes(opts.kv_type);
    if (opts.kv_type == GGML_TYPE_Q8_0) per_token = per_token * 34 / 32 + 1;
    est.kv_cache = n_ctx * per_token;
    const uint64_t n_vocab = std::max<uint64_t>(array_size(*md, "tokenizer.ggml.tokens"), 32000);
    const uint64_t n_ubatch = static_cast<uint64_t>(std::max(1, opts.n_ubatch));
    // Output logits for every parallel sequence, activations of one micro-batch, and slack for the
    // scheduler's graph buffers.
    est.buffers = n_vocab * 4 * (static_cast<uint64_t>(opts.n_parallel) + 1) + n_ubatch * n_embd * 4 * 12 + (32ull << 20);
    return est;
}

uint64_t gpu_memory_bytes() {
    llama::ensure_backend();
    uint64_t sum = 0;
    for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
        ggml_backend_dev_t dev = ggml_backend_dev_get(i);
        if (ggml_backend_dev_type(dev) != GGML_BACKEND_DEVICE_TYPE_GPU) continue;
        size_t free = 0, total = 0;
        ggml_backend_dev_memory(dev, &free, &total);
        sum += total;
    }
    return sum;
}

uint64_t default_memory_budget() { return physical_memory_bytes() / 10 * 8; }

uint64_t physical_memory_bytes() {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

}  // namespace rc::models
