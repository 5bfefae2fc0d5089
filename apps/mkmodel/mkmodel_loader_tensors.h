// Tensor lists taken from llama.cpp's own loader, for the architecture families whose layouts are
// too many and too intricate to mirror by hand (sliding-window, MoE, MLA, hybrid, RWKV).
//
// The pinned llama.cpp builds a model from metadata alone (llama_model_init_from_user): it creates
// every tensor its loader asks for, required and optional, and hands each to a callback. We record
// the names and shapes, free that model (its F32 buffers are never touched, so they cost address
// space, not memory), and decide the type and fill of each tensor ourselves by its role.
#pragma once

#include "mkmodel_arch_tensors.h"
#include "mkmodel_result.h"

#include <vector>

struct gguf_context;

namespace rc::mkmodel {

struct preset;

// `keys` holds the model's finished metadata (general.*, <arch>.*, tokenizer.*). Tensors whose
// name contains one of the preset's drop_tensors entries (optional tensors the family does not
// have, e.g. Q/K/V biases) are left out, as is output.weight when the preset ties its embeddings.
// Fails with llama.cpp's own error when it cannot build the architecture from these keys.
result<std::vector<tensor_spec>> tensors_from_loader(gguf_context * keys, const preset & p);

}  // namespace rc::mkmodel
