#include "engine/kv_bridge.h"

namespace rc::engine {

kv::blob_ptr kv_bridge::save(llama_seq_id seq, int p0, int p1) {
    llama_memory_seq_rm(mem_, scratch_, -1, -1);
    llama_memory_seq_cp(mem_, seq, scratch_, p0, p1);  // shares cells, copies nothing
    auto blob = std::make_shared<kv::block_blob>();
    blob->pos0 = p0;
    blob->n_tokens = p1 - p0;
    // The size of a state depends only on its cell count (for a given context); measured once each.
    auto [known, fresh] = size_of_.try_emplace(blob->n_tokens, 0);
    if (fresh) known->second = llama_state_seq_get_size(ctx_, scratch_);
    blob->bytes.resize(known->second);
    size_t n = llama_state_seq_get_data(ctx_, blob->bytes.data(), blob->bytes.size(), scratch_);
    if (n == 0 && !fresh) {  // not the size remembered after all: measure this one
        known->second = llama_state_seq_get_size(ctx_, scratch_);
        blob->bytes.resize(known->second);
        n = llama_state_seq_get_data(ctx_, blob->bytes.data(), blob->bytes.size(), scratch_);
    }
    llama_memory_seq_rm(mem_, scratch_, -1, -1);
    if (n == 0) return nullptr;
    blob->bytes.resize(n);
    return blob;
}

bool kv_bridge::restore(const kv::block_blob & blob, llama_seq_id seq) const {
    if (llama_state_seq_set_data(ctx_, blob.bytes.data(), blob.bytes.size(), scratch_) == 0) {
        llama_memory_seq_rm(mem_, scratch_, -1, -1);
        return false;
    }
    llama_memory_seq_cp(mem_, scratch_, seq, -1, -1);
    llama_memory_seq_rm(mem_, scratch_, -1, -1);
    return true;
}

}  // namespace rc::engine
