// Tensor lists per architecture: names, shapes (ggml order, ne[0] = row length), types and how each
// is filled. They mirror what the pinned llama.cpp loads in src/models/<arch>.cpp
// (load_arch_tensors); a required tensor missing here makes llama_model_load_from_file fail, which
// the mkmodel test catches.
#pragma once

#include <ggml.h>

#include <cstdint>
#include <string>
#include <vector>

namespace rc::mkmodel {

struct preset;

enum class fill_kind { normal, ones, zeros };

// What the copied tokenizer says about the vocabulary.
struct vocab_info {
    int64_t n_tokens = 0;
    int64_t n_token_types = 0;  // BERT segment types (tokenizer.ggml.token_type_count); 0 if absent
};

struct tensor_spec {
    std::string name;
    std::vector<int64_t> ne;  // ggml order: ne[0] is the row length
    ggml_type type = GGML_TYPE_F32;
    fill_kind fill = fill_kind::zeros;
    float std = 0.0f;  // for fill_kind::normal
};

// LLaMA-style decoder (src/models/llama.cpp): RMS norms, Q/K/V/O, SwiGLU FFN, no biases.
std::vector<tensor_spec> tensors_llama(const preset & p, const vocab_info & vocab);

// Qwen2 (src/models/qwen2.cpp): the llama layout plus Q/K/V biases, as real Qwen2 checkpoints have.
std::vector<tensor_spec> tensors_qwen2(const preset & p, const vocab_info & vocab);

// BERT encoder (src/models/bert.cpp): learned positions, token types, post-norm layers with biases,
// GELU FFN. Pooling is done by llama.cpp (<arch>.pooling_type), so no classifier head.
std::vector<tensor_spec> tensors_bert(const preset & p, const vocab_info & vocab);

}  // namespace rc::mkmodel
