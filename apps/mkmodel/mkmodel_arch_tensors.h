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

// normal: mean + std * N(0, 1), seeded per chunk. negative_ramp: every row is -1, -2, ..., -ne[0]
// (Mamba's S4D-real initialisation of A, stored negated as convert_hf_to_gguf.py writes -exp(A_log)).
enum class fill_kind { normal, ones, zeros, negative_ramp };

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
    float std = 0.0f;   // for fill_kind::normal
    float mean = 0.0f;  // for fill_kind::normal
};

// LLaMA-style decoder (src/models/llama.cpp): RMS norms, Q/K/V/O, SwiGLU FFN, no biases.
std::vector<tensor_spec> tensors_llama(const preset & p, const vocab_info & vocab);

// Qwen2 (src/models/qwen2.cpp): the llama layout plus Q/K/V biases, as real Qwen2 checkpoints have.
std::vector<tensor_spec> tensors_qwen2(const preset & p, const vocab_info & vocab);

// BERT encoder (src/models/bert.cpp): learned positions, token types, post-norm layers with biases,
// GELU FFN. Pooling is done by llama.cpp (<arch>.pooling_type), so no classifier head.
std::vector<tensor_spec> tensors_bert(const preset & p, const vocab_info & vocab);

// Mamba-1 (src/models/mamba.cpp): RMS-normed residual blocks of in_proj, causal depthwise conv1d,
// selective scan (x_proj -> dt/B/C, dt_proj, A, D) and out_proj; no attention, no FFN. Shapes come
// from preset::ssm. The SSM parameters follow Mamba's reference initialisation rather than the preset
// scales: A = -(1..d_state) per channel, D = 1, conv1d at std 1/sqrt(d_conv), dt bias such that
// softplus(bias) is about 0.01 (0.0003-0.3). conv1d, A and D stay F32 (llama.cpp's SSM kernels read
// them as F32; convert_hf_to_gguf.py keeps them F32), and ssm_dt.weight, whose rows are only dt_rank
// long, falls back to F16 when the matrix type's block does not fit (as llama-quantize does).
std::vector<tensor_spec> tensors_mamba(const preset & p, const vocab_info & vocab);

}  // namespace rc::mkmodel
