#pragma once
// What a KV block's bytes depend on besides its tokens (ARCHITECTURE.md §5 Key): the model (fingerprint)
// and the KV layout of this context (cell types, layers, heads, RoPE, flash-attention V layout).
#include <llama.h>

#include "kv/block_key.h"
#include "llama/model.h"

namespace rc::engine {

kv::kv_identity kv_identity_of(const llama::model & m, const llama_context_params & cp);

}  // namespace rc::engine
