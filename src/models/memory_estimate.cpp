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
    // As engine.cpp decides: sliding-window, recurrent and hybrid memories keep no idle conversations
    // in the context (snapshots), and a model without attention heads has no per-token cache at all.
    const bool snapshots = get("attention.sliding_window", 0) > 0 || md->find(arch + ".ssm.state_size") ||
                           md->find(arch + ".wkv.head_size") || md->find(arch + ".shortconv.l_cache");
    const bool attention = md->get_uint(arch + ".attention.head_count").value_or(1) > 0;
    uint64_t per_token = attention ? n_layer * n_head_kv * (head_k + head_v) * kv_cell_bytes(opts.kv_type) : 0;
    if (opts.kv_type == GGML_TYPE_Q8_0) per_token = per_token * 34 / 32 + 1;
    est.kv_cache = n_ctx * per_token;
    const uint64_t n_vocab = std::max<uint64_t>(array_size(*md, "tokenizer.ggml.tokens"), 32000);
    const uint64_t n_ubatch = static_cast<uint64_t>(std::max(1, std::min(opts.n_ubatch, opts.n_batch)));
    // llama.cpp reserves its compute buffer for the worst-case graph: a whole micro-batch through the
    // lm head (n_vocab F32 logits per token, whatever is output) and, without flash attention, the
    // attention scores of a micro-batch against every cell. The allocator reuses memory between the
    // two, so the larger counts, plus the activations of one micro-batch. Then the output buffer: the
    // logits of every sequence id (engine.cpp's n_seq_max). Measured against llama.cpp's own figures on
    // every generated family (tests/integration/architecture_matrix_test.cpp): within 10 %.
    const uint64_t lm_head = n_vocab * 4 * n_ubatch;
    const uint64_t scores = opts.flash_attn || !attention ? 0 : n_ctx * n_ubatch * n_head * 4;
    const uint64_t n_seq_max = static_cast<uint64_t>(opts.n_parallel + (snapshots ? 0 : std::max(0, opts.kv.cached_sequences)) + 1);
    est.buffers = std::max(lm_head, scores) + n_ubatch * n_embd * 4 * 12 + n_vocab * 4 * n_seq_max + (8ull << 20);
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
