#include "engine/kv_bridge.h"

namespace rc::engine {

namespace {

// The flag of scripts/llama-patches/state-base-only.patch: the full-attention part alone.
constexpr llama_state_seq_flags k_state_base_only = 4;

llama_state_seq_flags flags_of(kv::blob_part part) {
    switch (part) {
        case kv::blob_part::attention: return k_state_base_only;
        case kv::blob_part::state: return LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY;
        case kv::blob_part::whole: break;
    }
    return LLAMA_STATE_SEQ_FLAGS_NONE;
}

}  // namespace

kv::blob_ptr kv_bridge::save(llama_seq_id seq, int p0, int p1, kv::blob_part part) {
    const auto flags = flags_of(part);
    llama_memory_seq_rm(mem_, scratch_, -1, -1);
    // A state is the window (or recurrent state) after p1: all of the sequence's cells up to there.
    llama_memory_seq_cp(mem_, seq, scratch_, part == kv::blob_part::state ? 0 : p0, p1);  // shares cells, copies nothing
    // llama.cpp keeps a window's cells until the next batch needs room (up to a batch more than the
    // window); every variant masks a key n_swa or more positions back, so those stay behind.
    if (part == kv::blob_part::state && window_ > 0 && p1 > window_) llama_memory_seq_rm(mem_, scratch_, 0, p1 - window_);
    auto blob = std::make_shared<kv::block_blob>();
    blob->pos0 = p0;
    blob->n_tokens = p1 - p0;
    // The size of a state depends only on its cell count and part (for a given context); measured once
    // each. A window's cell count is not the positions' count: measured every time.
    const bool remembered = part != kv::blob_part::state;
    auto [known, fresh] = size_of_.try_emplace({blob->n_tokens, part}, 0);
    if (fresh || !remembered) known->second = llama_state_seq_get_size_ext(ctx_, scratch_, flags);
    blob->bytes.resize(known->second);
    size_t n = llama_state_seq_get_data_ext(ctx_, blob->bytes.data(), blob->bytes.size(), scratch_, flags);
    if (n == 0 && !fresh && remembered) {  // not the size remembered after all: measure this one
        known->second = llama_state_seq_get_size_ext(ctx_, scratch_, flags);
        blob->bytes.resize(known->second);
        n = llama_state_seq_get_data_ext(ctx_, blob->bytes.data(), blob->bytes.size(), scratch_, flags);
    }
    llama_memory_seq_rm(mem_, scratch_, -1, -1);
    if (n == 0) return nullptr;
    blob->bytes.resize(n);
    return blob;
}

bool kv_bridge::restore(const kv::block_blob & blob, llama_seq_id seq, kv::blob_part part) const {
    if (llama_state_seq_set_data_ext(ctx_, blob.bytes.data(), blob.bytes.size(), scratch_, flags_of(part)) == 0) {
        llama_memory_seq_rm(mem_, scratch_, -1, -1);
        return false;
    }
    llama_memory_seq_cp(mem_, scratch_, seq, -1, -1);
    llama_memory_seq_rm(mem_, scratch_, -1, -1);
    return true;
}

}  // namespace rc::engine
